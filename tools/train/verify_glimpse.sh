#!/usr/bin/env bash
# Runs `glimpse classify` on every models/samples/ image with every variant of its family and checks
# that the top-1 label is the one in the file name (digit-7.png -> "7", cifar10-cat.jpg -> "cat").
# Usage: tools/train/verify_glimpse.sh [path/to/glimpse]   (default: .build/release/glimpse)
set -euo pipefail
cd "$(dirname "$0")/../.."
GLIMPSE=${1:-.build/release/glimpse}
[ -x "$GLIMPSE" ] || { echo "error: no glimpse binary at $GLIMPSE (build it, or pass its path)" >&2; exit 2; }
fail=0
for img in models/samples/*; do
  base=$(basename "$img"); stem=${base%.*}
  case $stem in
    digit-*) family=digits; want=${stem#digit-} ;;
    cifar10-*) family=cifar10; want=${stem#cifar10-} ;;
    *) continue ;;
  esac
  for model in $(python3 -c "import json,sys; m=json.load(open('models/models.json'))['models']; print(' '.join(k for k,v in sorted(m.items()) if v.get('family')=='$family'))"); do
    got=$("$GLIMPSE" classify "$img" --model "$model" --models models --top-k 1 2>/dev/null | awk '/ index /{print $2; exit}')
    if [ "$got" = "$want" ]; then echo "ok    $model $base -> $got"; else echo "FAIL  $model $base -> $got (want $want)"; fail=1; fi
  done
done
exit $fail
