// swift-tools-version:6.1
import Foundation
import PackageDescription

// SIMD kernels need an explicit CPU target: without one, `addProduct` lowers to calls of `fmaf`.
// GLIMPSE_TARGET_CPU overrides the choice (e.g. `haswell` for valgrind, which rejects AVX-512).
// Otherwise the build machine decides: an AVX-512 target with VNNI (`vpdpbusd`, the int8 kernels)
// when /proc/cpuinfo lists avx512_vnni, plain AVX-512 without it, else AVX2. The binary then runs
// only on CPUs with those features (see README "Build configurations").
func targetCPU() -> String {
    if let cpu = ProcessInfo.processInfo.environment["GLIMPSE_TARGET_CPU"], !cpu.isEmpty { return cpu }
    guard let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8) else { return "haswell" }
    let flags = Set(info.split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\t" }).map(String.init))
    if flags.contains("avx512_vnni") && flags.contains("avx512bw") {
        return info.contains("AuthenticAMD") ? "znver4" : "icelake-server"
    }
    if flags.contains("avx512f") { return "skylake-avx512" }
    return "haswell"
}

let cpu = targetCPU()
/// Whether the chosen target has AVX-512 VNNI. Swift code tests `GLIMPSE_VNNI` (`#if`); the C header
/// tests the compiler's own `__AVX512VNNI__`, which `-Xcc -march` sets for the Clang importer.
let vnniCPUs: Set<String> = ["znver4", "znver5", "icelake-server", "icelake-client", "cascadelake", "cooperlake",
                             "sapphirerapids", "emeraldrapids", "graniterapids", "tigerlake", "rocketlake"]
/// Targets with AVX2 (`GLIMPSE_AVX2`): the int8 GEMM's `vpmaddubsw` + `vpmaddwd` path is compiled for them,
/// and selected where VNNI is missing. (Not the x86-64-v3/v4 levels: swiftc's -target-cpu rejects them.)
let avx2CPUs: Set<String> = vnniCPUs.union(["haswell", "broadwell", "skylake", "skylake-avx512", "alderlake", "znver1",
                                            "znver2", "znver3"])
/// Targets with AVX-512 F/BW/DQ/VL (`GLIMPSE_AVX512`): the kernels sized for 32 zmm registers are compiled for them.
let avx512CPUs: Set<String> = vnniCPUs.union(["skylake-avx512"])
let cpuFlags: [String] = ["-target-cpu", cpu, "-Xcc", "-march=\(cpu)"] + (vnniCPUs.contains(cpu) ? ["-DGLIMPSE_VNNI"] : [])
    + (avx2CPUs.contains(cpu) ? ["-DGLIMPSE_AVX2"] : []) + (avx512CPUs.contains(cpu) ? ["-DGLIMPSE_AVX512"] : [])
// Compute targets are optimized in every configuration (debug too), so `swift test` in debug
// runs real kernels at full speed. See README "Build configurations".
let computeSettings: [SwiftSetting] = [.unsafeFlags(cpuFlags + ["-O", "-enforce-exclusivity=unchecked"])]
let cpuSettings: [SwiftSetting] = [.unsafeFlags(cpuFlags)]
// Service layers (serving, model tools, RPC, server, the executables, the load generator) compile in
// the Swift 6 language mode, so the compiler checks data-race safety where the concurrency is. The
// compute targets stay in Swift 5 mode (pointer-heavy kernels shared across their own threads), as
// do GlimpseQuantize and the tests.
let serviceSettings: [SwiftSetting] = cpuSettings + [.swiftLanguageMode(.v6)]

// Package products more than one target uses.
let logging: Target.Dependency = .product(name: "Logging", package: "swift-log")
let metrics: Target.Dependency = .product(name: "Metrics", package: "swift-metrics")
let metricsTestKit: Target.Dependency = .product(name: "MetricsTestKit", package: "swift-metrics")
let serviceLifecycle: Target.Dependency = .product(name: "ServiceLifecycle", package: "swift-service-lifecycle")
let hummingbird: Target.Dependency = .product(name: "Hummingbird", package: "hummingbird")
let nioHTTP2: Target.Dependency = .product(name: "NIOHTTP2", package: "swift-nio-http2")
let nioHPACK: Target.Dependency = .product(name: "NIOHPACK", package: "swift-nio-http2")
let nioCore: Target.Dependency = .product(name: "NIOCore", package: "swift-nio")
let httpTypes: Target.Dependency = .product(name: "HTTPTypes", package: "swift-http-types")
let nioPosix: Target.Dependency = .product(name: "NIOPosix", package: "swift-nio")
let argumentParser: Target.Dependency = .product(name: "ArgumentParser", package: "swift-argument-parser")
let crypto: Target.Dependency = .product(name: "Crypto", package: "swift-crypto")
let histogram: Target.Dependency = .product(name: "Histogram", package: "hdrhistogram-swift")

let package = Package(
    name: "Glimpse",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "glimpse", targets: ["glimpse"]),
        .executable(name: "glimpse-load", targets: ["glimpse-load"]),
        .library(name: "GlimpseServing", targets: ["GlimpseServing"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.0.0"..<"5.0.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift.git", from: "0.2.0"),
    ],
    targets: [
        // C libraries, from Debian's -dev packages.
        .systemLibrary(name: "CTurboJPEG", pkgConfig: "libturbojpeg", providers: [.apt(["libturbojpeg0-dev"])]),
        .systemLibrary(name: "CSPNG", pkgConfig: "spng", providers: [.apt(["libspng-dev"])]),
        .systemLibrary(name: "CNGHTTP2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        // Header-only intrinsic wrappers (`vpdpbusd`, `vpmaddubsw` + `vpmaddwd`) for the int8 kernels.
        .systemLibrary(name: "CGlimpseSIMD", path: "Sources/CGlimpseSIMD"),

        // Compute layers.
        .target(name: "GlimpseTensor", swiftSettings: computeSettings),
        // The one JSON lexer and parser: RPC bodies and the model manifest build their trees on it.
        .target(name: "GlimpseJSON", swiftSettings: serviceSettings),
        .target(name: "GlimpseKernels", dependencies: ["CGlimpseSIMD"], swiftSettings: computeSettings),
        .target(name: "GlimpseEngine", dependencies: ["GlimpseKernels", "GlimpseTensor"], swiftSettings: computeSettings),
        .target(name: "GlimpseONNX", dependencies: ["GlimpseEngine", "GlimpseKernels", "GlimpseTensor"], swiftSettings: computeSettings),
        .target(name: "GlimpseImage", dependencies: ["CTurboJPEG", "CSPNG", "CZlib", "GlimpseTensor"], swiftSettings: computeSettings),
        // Training a classifier head on extracted features (softmax regression, L-BFGS): `glimpse train`.
        .target(name: "GlimpseTraining", dependencies: ["GlimpseTensor"], swiftSettings: computeSettings),
        .target(name: "GlimpseQuantize", dependencies: ["GlimpseONNX", "GlimpseEngine", "GlimpseTensor", "GlimpseImage"], swiftSettings: computeSettings),

        // Service layers.
        .target(
            name: "GlimpseServing",
            dependencies: [
                "GlimpseEngine", "GlimpseONNX", "GlimpseImage", "GlimpseTensor", "GlimpseJSON", nioPosix, logging, metrics,
                serviceLifecycle, crypto,
            ],
            swiftSettings: serviceSettings
        ),
        // Offline model work apart from serving: accuracy evaluation, pulling models, the benchmark
        // table, training a classifier head from a folder of photos.
        .target(
            name: "GlimpseModelTools",
            dependencies: [
                "GlimpseServing", "GlimpseEngine", "GlimpseONNX", "GlimpseQuantize", "GlimpseTraining", "GlimpseImage",
                "GlimpseTensor", "CZlib", crypto,
            ],
            swiftSettings: serviceSettings
        ),
        .target(
            name: "GlimpseRPC",
            dependencies: ["GlimpseServing", "GlimpseEngine", "GlimpseImage", "GlimpseJSON", logging],
            swiftSettings: serviceSettings
        ),
        .target(
            name: "GlimpseServer",
            dependencies: [
                "GlimpseRPC", "GlimpseServing", "CNGHTTP2", hummingbird, nioHTTP2, nioHPACK, nioPosix, logging,
                serviceLifecycle, .product(name: "HummingbirdCore", package: "hummingbird"), httpTypes, nioCore,
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTPTypesHTTP2", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: serviceSettings
        ),
        .executableTarget(
            name: "glimpse",
            dependencies: [
                "GlimpseServer", "GlimpseRPC", "GlimpseServing", "GlimpseModelTools", "GlimpseQuantize", "GlimpseTraining", "GlimpseONNX", "GlimpseEngine", "GlimpseImage", "GlimpseTensor",
                argumentParser, logging, metrics, serviceLifecycle, .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: serviceSettings
        ),

        // Engine benchmark runner (tools/bench-engine/run.sh compares it with onnxruntime).
        .executableTarget(
            name: "bench-engine",
            dependencies: ["GlimpseONNX", "GlimpseEngine", "GlimpseKernels", "GlimpseTensor"],
            path: "tools/bench-engine/Runner",
            swiftSettings: computeSettings
        ),

        // Image pipeline benchmark runner (tools/bench-image/bench.sh compares it with Pillow).
        .executableTarget(
            name: "bench-image",
            dependencies: ["GlimpseImage"],
            path: "tools/bench-image/Runner",
            swiftSettings: computeSettings
        ),

        // Load generator over libnghttp2 (an HTTP/2 stack independent of the server's).
        .target(
            name: "GlimpseLoad",
            dependencies: ["CNGHTTP2", "COpenSSL", "GlimpseTensor", histogram],
            path: "loadtest/GlimpseLoad",
            swiftSettings: serviceSettings
        ),
        .executableTarget(
            name: "glimpse-load",
            dependencies: ["GlimpseLoad", argumentParser],
            path: "loadtest/glimpse-load",
            swiftSettings: serviceSettings
        ),

        // Test support shared by the test targets: the shared-data locator, seeded random numbers,
        // tolerance asserts, free ports and temporary folders.
        .target(name: "GlimpseTestSupport", dependencies: ["GlimpseTensor"], path: "Tests/GlimpseTestSupport"),

        .testTarget(name: "GlimpseQuantizeTests", dependencies: ["GlimpseQuantize", "GlimpseONNX", "GlimpseEngine", "GlimpseImage", "GlimpseTensor", "GlimpseModelTools", "GlimpseTestSupport"], swiftSettings: cpuSettings),
        .testTarget(name: "GlimpseTensorTests", dependencies: ["GlimpseTensor"]),
        .testTarget(name: "GlimpseJSONTests", dependencies: ["GlimpseJSON"]),
        .testTarget(name: "GlimpseKernelsTests", dependencies: ["GlimpseKernels", "GlimpseTensor", "GlimpseTestSupport"], swiftSettings: cpuSettings),
        .testTarget(name: "GlimpseEngineTests", dependencies: ["GlimpseEngine", "GlimpseKernels", "GlimpseTensor", "GlimpseTestSupport"], swiftSettings: cpuSettings),
        .testTarget(name: "GlimpseONNXTests", dependencies: ["GlimpseONNX", "GlimpseEngine", "GlimpseTensor", "GlimpseImage", "GlimpseTestSupport"], swiftSettings: cpuSettings),
        .testTarget(name: "GlimpseImageTests", dependencies: ["GlimpseImage", "GlimpseTensor", "GlimpseTestSupport"], swiftSettings: cpuSettings),
        .testTarget(name: "GlimpseServingTests", dependencies: ["GlimpseServing", "GlimpseEngine", "GlimpseKernels", "GlimpseONNX", "GlimpseTensor", "GlimpseTestSupport", metricsTestKit], swiftSettings: cpuSettings),
        .testTarget(name: "GlimpseModelToolsTests", dependencies: ["GlimpseModelTools", "GlimpseServing", "GlimpseImage", "GlimpseONNX", "GlimpseQuantize", "GlimpseTensor", "GlimpseTestSupport", hummingbird, logging], swiftSettings: cpuSettings),
        .testTarget(name: "GlimpseTrainingTests", dependencies: ["GlimpseTraining", "GlimpseTestSupport"], swiftSettings: cpuSettings),
        .testTarget(name: "GlimpseRPCTests", dependencies: ["GlimpseImage", "GlimpseRPC", "GlimpseServing"], swiftSettings: cpuSettings),
        .testTarget(
            name: "GlimpseServerTests",
            dependencies: [
                "GlimpseServer", "GlimpseRPC", "GlimpseServing", "GlimpseImage", "GlimpseLoad", "GlimpseTestSupport",
                hummingbird, metricsTestKit, nioHTTP2, nioHPACK, nioCore, nioPosix, httpTypes, logging, serviceLifecycle,
            ],
            swiftSettings: cpuSettings
        ),
        .testTarget(name: "GlimpseLoadTests", dependencies: ["GlimpseLoad", "CNGHTTP2", "GlimpseTestSupport", histogram], swiftSettings: cpuSettings),
    ],
    swiftLanguageModes: [.v5]
)

// libFuzzer harnesses (`Fuzz/<Name>/main.swift`, run by `scripts/fuzz.sh`): one executable per entry point
// that reads outside bytes. Declared only when GLIMPSE_FUZZ=1, since they are built with
// `-sanitize=fuzzer,address` (each `main` hands over to libFuzzer's driver); the usual build and
// tests never see them. See benchmarks/fuzzing.md.
if ProcessInfo.processInfo.environment["GLIMPSE_FUZZ"] == "1" {
    package.targets += [
        .systemLibrary(name: "CLibFuzzer", path: "Fuzz/CLibFuzzer"),
        .executableTarget(name: "fuzz-json", dependencies: ["CLibFuzzer", "GlimpseJSON"], path: "Fuzz/JSON", swiftSettings: cpuSettings),
        .executableTarget(name: "fuzz-base64", dependencies: ["CLibFuzzer", "GlimpseRPC"], path: "Fuzz/Base64", swiftSettings: cpuSettings),
        .executableTarget(name: "fuzz-rpc", dependencies: ["CLibFuzzer", "GlimpseRPC", "GlimpseServing"], path: "Fuzz/RPC", swiftSettings: cpuSettings),
        .executableTarget(name: "fuzz-jpeg-segments", dependencies: ["CLibFuzzer", "GlimpseImage"], path: "Fuzz/JPEGSegments", swiftSettings: cpuSettings),
        .executableTarget(name: "fuzz-image", dependencies: ["CLibFuzzer", "GlimpseImage"], path: "Fuzz/Image", swiftSettings: cpuSettings),
        .executableTarget(name: "fuzz-onnx", dependencies: ["CLibFuzzer", "GlimpseONNX", "GlimpseEngine"], path: "Fuzz/ONNX", swiftSettings: cpuSettings),
        .executableTarget(name: "fuzz-manifest", dependencies: ["CLibFuzzer", "GlimpseServing", "GlimpseModelTools"], path: "Fuzz/Manifest", swiftSettings: cpuSettings),
        .executableTarget(name: "fuzz-load-scanner", dependencies: ["CLibFuzzer", "GlimpseLoad"], path: "Fuzz/LoadScanner", swiftSettings: cpuSettings),
    ]
}
