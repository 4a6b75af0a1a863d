# syntax=docker/dockerfile:1
# The Glimpse container image: `glimpse serve` with the embedded models of models/ at /models.
#
#   docker build -t glimpse:dev .
#   docker run --rm -p 8080:8080 glimpse:dev          # serves /models on 0.0.0.0:8080
#
# deploy/k8s/ runs it on Kubernetes. Two stages: the Swift toolchain and the -dev packages build a release
# binary, and a slim Debian runs it with the runtime libraries only.

# ---- build ----
FROM swift:6.3-bookworm AS build

# The C libraries Glimpse builds against: the non-test list of scripts/setup.sh.
RUN export DEBIAN_FRONTEND=noninteractive \
    && apt-get update -q \
    && apt-get install -q -y --no-install-recommends \
       libturbojpeg0-dev libspng-dev libnghttp2-dev libssl-dev zlib1g-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*

# The CPU the SIMD kernels are compiled for. Package.swift's targetCPU() takes GLIMPSE_TARGET_CPU when it
# is set; otherwise it reads /proc/cpuinfo of the machine that builds, so an image built on an AVX-512
# workstation would die with SIGILL on older nodes. The value goes to swiftc (-target-cpu) and to clang
# (-Xcc -march), and Package.swift checks it against two lists:
#   - avx2CPUs (haswell ... znver3, skylake-avx512, ...): defines GLIMPSE_AVX2, the AVX2 int8 GEMM;
#   - vnniCPUs (icelake-server, sapphirerapids, znver4, ...): defines GLIMPSE_VNNI, the vpdpbusd kernels.
# The portable default is haswell, not x86-64-v3: avx2CPUs lists x86-64-v3, but Swift 6.3's
# `-target-cpu x86-64-v3` fails ("unknown target CPU 'x86-64-v3'"; clang accepts the x86-64-vN levels
# only through -march). haswell is x86-64-v3 (AVX2, FMA, BMI1/2, F16C, LZCNT, MOVBE) plus PCLMUL, RDRND,
# FSGSBASE, INVPCID and XSAVEOPT, which the compiler emits only for intrinsics Glimpse does not use, so
# the binary runs on every x86-64 CPU since Haswell and Zen 1. Its int8 models run on the fp32 lowering
# (README "Build configurations"); for nodes with VNNI, build with
# --build-arg GLIMPSE_TARGET_CPU=icelake-server (Intel) or znver4 (AMD) and schedule the pods onto such
# nodes only (a nodeSelector or node affinity; see deploy/k8s/deployment.yaml).
ARG GLIMPSE_TARGET_CPU=haswell
ENV GLIMPSE_TARGET_CPU=${GLIMPSE_TARGET_CPU}

WORKDIR /build
# Dependencies first, in their own layer: rebuilt only when the manifest (or a Package.resolved, which
# git ignores but a checkout may hold) changes.
COPY ./Package.* ./
RUN swift package resolve $([ -f ./Package.resolved ] && echo "--force-resolved-versions" || true)

COPY . .
# --static-swift-stdlib links the Swift runtime and Foundation into the binary, so the runtime image
# needs no toolchain. swift-backtrace-static prints a symbolicated backtrace if it ever crashes.
RUN swift build -c release --product glimpse --static-swift-stdlib \
    && mkdir /staging \
    && cp "$(swift build -c release --show-bin-path)/glimpse" /staging/ \
    && cp /usr/libexec/swift/linux/swift-backtrace-static /staging/

# ---- run ----
FROM debian:bookworm-slim

# What the binary links dynamically: libturbojpeg0 and libspng0 (image decoding), zlib1g, and libcurl4,
# which the static Foundation's URLSession (`glimpse models pull`) needs. libnghttp2-14 and libssl3
# come with libcurl4 and are named for clarity; libstdc++6 is the C++ runtime the Swift runtime uses.
# ca-certificates: HTTPS for `models pull`.
RUN export DEBIAN_FRONTEND=noninteractive \
    && apt-get update -q \
    && apt-get install -q -y --no-install-recommends \
       libturbojpeg0 libspng0 libcurl4 libnghttp2-14 libssl3 zlib1g libstdc++6 ca-certificates \
    && rm -rf /var/lib/apt/lists/*

# A fixed non-root uid/gid, which deploy/k8s/ names in its securityContext (runAsUser 10001).
RUN groupadd --system --gid 10001 glimpse \
    && useradd --system --uid 10001 --gid glimpse --no-create-home --home-dir /nonexistent \
       --shell /usr/sbin/nologin glimpse

COPY --from=build /staging/glimpse /usr/local/bin/glimpse
COPY --from=build /staging/swift-backtrace-static /usr/local/libexec/glimpse/swift-backtrace-static
# The embedded models (about 15 MB), owned by root and read-only to the server.
COPY models /models

ENV SWIFT_BACKTRACE=enable=yes,sanitize=yes,threads=all,images=all,interactive=no,swift-backtrace=/usr/local/libexec/glimpse/swift-backtrace-static

USER 10001:10001
WORKDIR /
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/glimpse", "serve"]
# Defaults for `docker run`; Kubernetes passes its own arguments (deploy/k8s/deployment.yaml).
CMD ["--host", "0.0.0.0", "--port", "8080", "--models", "/models"]
