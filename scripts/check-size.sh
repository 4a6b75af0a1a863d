#!/bin/sh
# Size limits of README "Architecture": no source file over 400 lines and no function (func, init,
# deinit, accessor-free body) over 80 lines, outside the micro-kernels. Reads the files as text:
# a body is measured by matching braces from its declaration, skipping string literals and comments.
# Usage: scripts/check-size.sh [--all]   (--all also lists what the exceptions below cover)
set -eu
cd "$(dirname "$0")/.."

max_file=400
max_func=80

# Micro-kernels (register-blocked SIMD loops, unrolled on purpose) are exempt; README "Architecture"
# gives the reason.
exempt='^Sources/GlimpseKernels/'

files=$(find Sources loadtest tools Fuzz Tests -name '*.swift' | sort)
[ "${1:-}" = --all ] && exempt='^$'

out=$(for f in $files; do
    printf '%s\n' "$f" | grep -Eq "$exempt" && continue
    awk -v file="$f" -v max_file="$max_file" -v max_func="$max_func" '
    function strip(s,    out, i, c, n) {
        # Drops string literals and // comments so their braces do not count.
        out = ""; n = length(s)
        for (i = 1; i <= n; i++) {
            c = substr(s, i, 1)
            if (inblock) {
                if (c == "*" && substr(s, i + 1, 1) == "/") { inblock = 0; i++ }
                continue
            }
            if (instring) {
                if (c == "\\") { i++; continue }
                if (c == "\"") instring = 0
                continue
            }
            if (c == "/" && substr(s, i + 1, 1) == "/") break
            if (c == "/" && substr(s, i + 1, 1) == "*") { inblock = 1; i++; continue }
            if (c == "\"") {
                if (substr(s, i, 3) == "\"\"\"") { multiline = !multiline; i += 2; continue }
                instring = 1; continue
            }
            if (multiline) continue
            out = out c
        }
        instring = 0
        return out
    }
    {
        code = strip($0)
        if (!open && code ~ /(^|[^A-Za-z0-9_.])(func[ \t]+[^ \t(]+|init[?!]?|deinit)[ \t]*[(<{]/ && code !~ /protocol /) {
            name = code
            sub(/^[ \t]+/, "", name)
            pending = 1; start = NR; depth = 0
        }
        if (pending || open) {
            n = length(code)
            for (i = 1; i <= n; i++) {
                c = substr(code, i, 1)
                if (c == "{") { depth++; if (pending) { pending = 0; open = 1 } }
                else if (c == "}") {
                    depth--
                    if (open && depth == 0) {
                        open = 0
                        if (NR - start + 1 > max_func) printf "%s:%d: function of %d lines (limit %d): %s\n", file, start, NR - start + 1, max_func, substr(name, 1, 80)
                        break
                    }
                }
            }
            # A requirement or declaration without a body.
            if (pending && depth == 0 && code !~ /[,(]$/ && code ~ /\)[^{]*$/ && NR > start + 3) pending = 0
        }
    }
    END { if (NR > max_file) printf "%s: %d lines (limit %d)\n", file, NR, max_file }
    ' "$f"
done)

if [ -n "$out" ]; then
    printf '%s\n' "$out"
    echo "check-size: $(printf '%s\n' "$out" | wc -l) over the limits" >&2
    exit 1
fi
echo "check-size: no file over $max_file lines, no function over $max_func lines (outside the exempt kernels)"
