#!/bin/sh
# Checks the package's layering without building anything:
#  1. every module a source file imports is declared in its target's dependencies (Package.swift),
#     unless it ships with the toolchain (Foundation, Glibc, XCTest, ...);
#  2. every declared dependency is imported by at least one file of the target (nothing unused);
#  3. dependencies point down: a target depends only on targets of a lower layer (the table below,
#     the order of README "Architecture").
# Prints one line per problem and exits 1 when there is any; prints a summary and exits 0 otherwise.
set -eu
cd "$(dirname "$0")/.."

# Layer of each target of this package: a target may depend on targets of a strictly lower layer.
# Third-party products (NIO, Hummingbird, swift-log, ...) are outside the table and not ranked.
layers='
CTurboJPEG 0
CSPNG 0
CNGHTTP2 0
COpenSSL 0
CZlib 0
CGlimpseSIMD 0
GlimpseTensor 1
GlimpseJSON 1
GlimpseKernels 2
GlimpseTraining 2
GlimpseTestSupport 2
GlimpseImage 2
GlimpseLoad 2
GlimpseEngine 3
GlimpseONNX 4
GlimpseQuantize 5
GlimpseServing 5
GlimpseModelTools 6
GlimpseRPC 6
GlimpseServer 7
bench-engine 8
bench-image 8
glimpse-load 8
glimpse 9
fuzz-json 10
fuzz-base64 10
fuzz-rpc 10
fuzz-jpeg-segments 10
fuzz-image 10
fuzz-onnx 10
fuzz-manifest 10
fuzz-load-scanner 10
'

# Modules that come with the toolchain and need no declaration.
system='Foundation FoundationEssentials FoundationNetworking FoundationXML Glibc Musl Darwin Dispatch Synchronization XCTest Testing _Concurrency Observation'

# One line per target: kind|name|folder|dep dep dep
targets=$(tr '\n' ' ' < Package.swift | awk '
# The position just after the bracket that closes the one opened before `s` starts.
function closing(s, opener, closer,    depth, i, c) {
    depth = 1
    for (i = 1; i <= length(s) && depth > 0; i++) {
        c = substr(s, i, 1)
        if (c == opener) depth++
        else if (c == closer) depth--
    }
    return i
}
function field(s, key,    i, r) {
    i = index(s, key ": \"")
    if (i == 0) return ""
    r = substr(s, i + length(key) + 3)
    return substr(r, 1, index(r, "\"") - 1)
}
{
    text = $0
    # Products named once: let name: Target.Dependency = .product(name: "X", package: "p")
    t = $0
    key = ": Target.Dependency = .product(name: \""
    while ((p = index(t, key)) > 0) {
        pre = substr(t, 1, p - 1)
        match(pre, /[A-Za-z_][A-Za-z0-9_]*$/)
        var = substr(pre, RSTART, RLENGTH)
        t = substr(t, p + length(key))
        product[var] = substr(t, 1, index(t, "\"") - 1)
    }
    while (1) {
        best = 0
        n = split(".target( .executableTarget( .testTarget( .systemLibrary(", kinds, " ")
        for (k = 1; k <= n; k++) {
            p = index(text, kinds[k])
            if (p > 0 && (best == 0 || p < best)) { best = p; kind = kinds[k] }
        }
        if (best == 0) break
        text = substr(text, best + length(kind))
        i = closing(text, "(", ")")
        body = substr(text, 1, i - 2)
        text = substr(text, i)
        name = field(body, "name")
        path = field(body, "path")
        if (path == "") path = (kind == ".testTarget(" ? "Tests/" : "Sources/") name
        deps = ""
        d = index(body, "dependencies: [")
        if (d > 0) {
            rest = substr(body, d + 15)
            list = substr(rest, 1, closing(rest, "[", "]") - 2)
            # products named by a let above, outside string literals
            bare = list
            gsub(/"[^"]*"/, "\"\"", bare)
            nb = split(bare, words, /[^A-Za-z0-9_.]+/)
            for (w = 1; w <= nb; w++) if (words[w] in product) deps = deps " " product[words[w]]
            # .product(name: "X", package: "p") and plain "X"
            while (length(list) > 0) {
                q = index(list, "\"")
                if (q == 0) break
                before = substr(list, 1, q - 1)
                list = substr(list, q + 1)
                e = index(list, "\"")
                word = substr(list, 1, e - 1)
                list = substr(list, e + 1)
                if (before ~ /package: *$/ || before ~ /condition/) continue
                deps = deps " " word
            }
        }
        sub(/^\(/, "", kind); gsub(/[.(]/, "", kind)
        print kind "|" name "|" path "|" deps
    }
}')

rank() { printf '%s\n' "$layers" | awk -v t="$1" '$1 == t { print $2 }'; }

report() { echo "check-layers: $1"; }

printf '%s\n' "$targets" > "${TMPDIR:-/tmp}/glimpse-layers.$$"
while IFS='|' read -r kind name folder deps; do
    [ -n "$name" ] || continue
    [ "$kind" = systemLibrary ] && continue
    own=$(rank "$name")
    if [ "$kind" = testTarget ]; then own=100; fi
    if [ -z "$own" ]; then report "$name has no layer in scripts/check-layers.sh"; continue; fi
    [ -d "$folder" ] || { report "$name: folder $folder not found"; continue; }
    imports=$(find "$folder" -name '*.swift' -exec awk '
        /^[[:space:]]*(@[A-Za-z_]+(\([^)]*\))?[[:space:]]+)*import[[:space:]]/ {
            for (i = 1; i <= NF; i++) if ($i == "import") break
            m = $(i + 1)
            if (m ~ /^(struct|class|enum|func|protocol|typealias|var|let)$/) m = $(i + 2)
            sub(/\..*/, "", m)
            print FILENAME " " m
        }' {} + | sort -u)
    # 1. undeclared imports, and layer order of what is imported
    printf '%s\n' "$imports" | while read -r file module; do
        [ -n "$module" ] || continue
        case " $system " in *" $module "*) continue ;; esac
        case " $deps " in
            *" $module "*) ;;
            *) echo "check-layers: $file imports $module, which $name does not declare in Package.swift" ;;
        esac
    done
    # 2. unused declarations, 3. direction of each declared dependency
    for dep in $deps; do
        printf '%s\n' "$imports" | awk -v m="$dep" '$2 == m { found = 1 } END { exit !found }' ||
            report "$name declares $dep but no file of $folder imports it"
        if [ "$dep" = GlimpseTestSupport ] && [ "$kind" != testTarget ]; then
            report "$name depends on GlimpseTestSupport, which only test targets may use"
        fi
        other=$(rank "$dep")
        if [ -n "$other" ] && [ "$other" -ge "$own" ]; then
            report "$name (layer $own) depends on $dep (layer $other): dependencies must point to a lower layer"
        fi
    done
done < "${TMPDIR:-/tmp}/glimpse-layers.$$" > "${TMPDIR:-/tmp}/glimpse-layers-out.$$"
rm -f "${TMPDIR:-/tmp}/glimpse-layers.$$"
out="${TMPDIR:-/tmp}/glimpse-layers-out.$$"
count=$(grep -c '^check-layers:' "$out" || true)
cat "$out"
rm -f "$out"
if [ "$count" -gt 0 ]; then
    echo "check-layers: $count problem(s)" >&2
    exit 1
fi
echo "check-layers: $(printf '%s\n' "$targets" | grep -vc '^systemLibrary|') targets, imports match Package.swift and point down"
