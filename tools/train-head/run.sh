#!/usr/bin/env bash
# `glimpse train` against a scikit-learn reference on CIFAR-10, as the training acceptance asks:
# train on the first PER_CLASS images of each class of train.tar with BASE, `glimpse eval` on all
# 10,000 images of test.tar, then reference.py (scikit-learn's LogisticRegression, C = 0.01, on the
# same base's features extracted by onnxruntime from Pillow 224x224 resizes). Prints both.
#
#   tools/train-head/run.sh [--no-build] [--per-class 500] [--base mobilenetv2-12-int8] [--train-args "..."]
#
# Installs onnx, onnxruntime, scikit-learn and Pillow from PyPI into .build/train-reference-venv.
set -euo pipefail
cd "$(dirname "$0")/../.."
source tools/lib/bench.sh
per_class=500 base=mobilenetv2-12-int8 train_args=
parse_options --per-class=per_class --base=base --train-args=train_args -- "$@"
if [ "$build" = 1 ]; then swift build -c release --product glimpse >/dev/null; fi
venv=.build/train-reference-venv
if ! "$venv/bin/python" -c "import onnx, onnxruntime, sklearn, PIL" 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q onnx onnxruntime scikit-learn pillow numpy
fi
make_work_folder
data=../shared/datasets/cifar10-jpeg
echo "== glimpse train (base $base, first $per_class images per class of train.tar)"
# shellcheck disable=SC2086
.build/release/glimpse train "$data/train.tar" --base "$base" --per-class-limit "$per_class" --out "$work/cifar10-head.onnx" $train_args
echo "== glimpse eval on test.tar"
.build/release/glimpse eval "$data/test.tar" --models "$work" --model cifar10-head --batch 16
echo "== reference"
"$venv/bin/python" tools/train-head/reference.py "$work/cifar10-head.onnx" "$data/train.tar" "$data/test.tar" --per-class "$per_class"
