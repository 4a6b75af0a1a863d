import Foundation
import GlimpseRPC
import GlimpseServing
import GlimpseTestSupport
import XCTest

/// The Kubernetes manifests of `deploy/k8s/`, checked offline. kubernetes-validate (PyPI, pinned, in
/// `.build/k8s-venv`) validates the built-in kinds against the Kubernetes OpenAPI schemas it bundles;
/// `deploy/k8s/validate.py` (in `.build/kserve-venv`) the kinds it has no schema for (KServe's, the
/// Kustomization) and prometheus-adapter's config. Both must also fail on broken manifests. Then the
/// properties that matter for serving: probe paths, the drain fitting in the grace period, CPU matching
/// --threads, the Service's h2c, the autoscaler's metric being one the server exports, and the real
/// executable started with the manifests' flags answering every probe path they name.
/// `scripts/setup.sh --test` installs both virtual environments; a missing one fails the test.
final class KubernetesManifestTests: XCTestCase {
    /// The repository root (this file is `Tests/GlimpseServerTests/KubernetesManifestTests.swift`).
    static let root = URL(fileURLWithPath: #filePath).resolvingSymlinksInPath()
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    static let folder = root.appendingPathComponent("deploy/k8s")
    /// kubernetes-validate 1.37.0 bundles the schemas of 1.25 to 1.37: the newest, and 1.30, the first
    /// release with the preStop `sleep` action (deployment.yaml) on by default.
    static let kubernetesVersions = ["1.30.0", "1.37.0"]
    /// Kinds kubernetes-validate has no schema for (it warns and exits 0); validate.py checks them.
    static let customKinds: Set = ["ServingRuntime", "InferenceService", "Kustomization"]
    static let expectedFiles = ["deployment.yaml", "service.yaml", "pdb.yaml", "hpa.yaml", "prometheus-adapter-rules.yaml",
                                "kserve.yaml", "kustomization.yaml"]

    func testKubernetesValidateAcceptsEveryManifest() throws {
        let files = try Self.manifests()
        XCTAssertEqual(Set(Self.expectedFiles).subtracting(files.map { URL(fileURLWithPath: $0).lastPathComponent }), [])
        let out = try Self.kubernetesValidate(files)
        XCTAssertEqual(out.status, 0, out.output)
        let lines = out.output.split(separator: "\n").map(String.init)
        XCTAssertFalse(lines.contains { $0.hasPrefix("ERROR") || $0.hasPrefix("FATAL") }, out.output)
        // Each built-in document passed against each version; it only warned about the kinds validate.py checks.
        let builtIn = try Self.dump().values.joined().filter { !Self.customKinds.contains($0["kind"] as? String ?? "") }
        XCTAssertEqual(lines.filter { $0.contains(" passed for resource ") }.count, builtIn.count * Self.kubernetesVersions.count,
                       out.output)
        for line in lines where line.hasPrefix("WARN") {
            let kind = line.range(of: #"(?<=for kind )\w+"#, options: .regularExpression).map { String(line[$0]) } ?? ""
            XCTAssertTrue(Self.customKinds.contains(kind), "kubernetes-validate did not check: \(line)")
        }
    }

    func testValidatePyChecksWhatKubernetesValidateCannot() throws {
        let out = try Self.run(try Self.venvTool("kserve-venv", "python"), [Self.validatePy] + (try Self.manifests()))
        XCTAssertEqual(out.status, 0, out.output)
        for expected in ["servingruntime/glimpse: checked against KServe's models",
                         "inferenceservice/glimpse-imagenet: checked against KServe's models",
                         "kustomization: checked as a kustomization",
                         "configmap/adapter-config: checked its prometheus-adapter config"] {
            XCTAssertTrue(out.output.contains(expected), "missing \"\(expected)\" in:\n\(out.output)")
        }
    }

    /// Each real manifest with one mistake: both validators must exit non-zero and name it.
    func testValidatorsRejectBrokenManifests() throws {
        let dir = try temporaryFolder("k8s").url
        // Built-in kinds go to kubernetes-validate; KServe's kinds and the adapter's config to validate.py.
        let broken: [(file: String, from: String, to: String, byValidatePy: Bool, expect: String)] = [
            ("deployment.yaml", "revisionHistoryLimit: 5", "revisionHistoryLimit: 5\n  replicas: \"two\"", false, "'two' is not of type 'integer'"),
            ("deployment.yaml", "terminationGracePeriodSeconds:", "terminationGracePeriodSecond:", false,
             "'terminationGracePeriodSecond' was unexpected"),
            ("service.yaml", "appProtocol:", "applicationProtocol:", false, "'applicationProtocol' was unexpected"),
            ("kserve.yaml", "storageUri:", "storageURI:", true, "unknown field 'storageURI' for V1beta1ModelSpec"),
            ("kserve.yaml", "        - \"8080\"", "        - 8080", true, "expected str, found int 8080"),
            ("kserve.yaml", "protocolVersions:", "protocolVersion:", true, "unknown field 'protocolVersion'"),
            ("prometheus-adapter-rules.yaml", "by (<<.GroupBy>>)", "by (<<.GroupBy>>", true, "promtool check rules"),
            ("prometheus-adapter-rules.yaml", "seriesQuery:", "seriesQueries:", true, "unknown field 'seriesQueries'"),
        ]
        for (i, b) in broken.enumerated() {
            let text = try String(contentsOf: Self.folder.appendingPathComponent(b.file), encoding: .utf8)
            XCTAssertTrue(text.contains(b.from), "\(b.file) no longer contains \(b.from)")
            let file = dir.appendingPathComponent("\(i)-\(b.file)")
            try text.replacingOccurrences(of: b.from, with: b.to).write(to: file, atomically: true, encoding: .utf8)
            let out = b.byValidatePy ? try Self.run(try Self.venvTool("kserve-venv", "python"), [Self.validatePy, file.path])
                                     : try Self.kubernetesValidate([file.path])
            XCTAssertNotEqual(out.status, 0, "\(b.file) with \(b.to) passed:\n\(out.output)")
            XCTAssertTrue(out.output.contains(b.expect), "\(b.file) with \(b.to): expected \"\(b.expect)\" in:\n\(out.output)")
        }
    }

    func testDeploymentProbesDrainAndResources() throws {
        let deployment = try Self.document("deployment.yaml", kind: "Deployment")
        let pod = Self.at(deployment, "spec", "template", "spec")
        let c = try Self.container(pod, named: "glimpse")
        let args = c["args"] as? [String] ?? []
        XCTAssertEqual(c["command"] as? [String], ["/usr/local/bin/glimpse", "serve"])
        XCTAssertEqual(Self.flag(args, "--host"), "0.0.0.0")
        XCTAssertEqual(Self.flag(args, "--models"), "/models", "the folder the Dockerfile copies models/ to")
        XCTAssertEqual(Self.at(c, "ports", 0, "name") as? String, "http")
        XCTAssertEqual(Self.at(c, "ports", 0, "containerPort") as? Int, Int(Self.flag(args, "--port") ?? ""))
        XCTAssertEqual(Self.at(c, "readinessProbe", "httpGet", "path") as? String, "/readyz")
        XCTAssertEqual(Self.at(c, "livenessProbe", "httpGet", "path") as? String, "/healthz")
        XCTAssertEqual(Self.at(c, "readinessProbe", "httpGet", "port") as? String, "http")

        // The kubelet's SIGKILL must come after preStop, the drain delay and the whole drain.
        let delay = try XCTUnwrap(Double(Self.flag(args, "--drain-delay-s") ?? ""), "--drain-delay-s is missing")
        let drain = try XCTUnwrap(Double(Self.flag(args, "--drain-timeout-s") ?? ""), "--drain-timeout-s is missing")
        let preStop = Self.at(c, "lifecycle", "preStop", "sleep", "seconds") as? Double ?? 0
        let grace = try XCTUnwrap(Self.at(pod, "terminationGracePeriodSeconds") as? Double)
        XCTAssertGreaterThan(grace, preStop + delay + drain)
        XCTAssertGreaterThan(delay, 0, "a drain delay lets endpoints drop the pod before it stops accepting")

        // CPU request = limit = --threads (Guaranteed QoS), and a memory request and limit.
        let threads = try XCTUnwrap(Self.flag(args, "--threads"))
        XCTAssertEqual(Self.at(c, "resources", "requests", "cpu") as? String, threads)
        XCTAssertEqual(Self.at(c, "resources", "limits", "cpu") as? String, threads)
        XCTAssertNotNil(Self.at(c, "resources", "requests", "memory") as? String)
        XCTAssertNotNil(Self.at(c, "resources", "limits", "memory") as? String)

        let annotations = Self.at(deployment, "spec", "template", "metadata", "annotations") as? [String: String] ?? [:]
        XCTAssertEqual(annotations["prometheus.io/scrape"], "true")
        XCTAssertEqual(annotations["prometheus.io/port"], Self.flag(args, "--port"))
        XCTAssertEqual(annotations["prometheus.io/path"], "/metrics")
        XCTAssertNil(Self.at(deployment, "spec", "replicas"), "hpa.yaml owns the replica count")
    }

    func testServiceDisruptionBudgetAndAutoscaler() throws {
        let labels = try XCTUnwrap(Self.at(try Self.document("deployment.yaml", kind: "Deployment"),
                                           "spec", "template", "metadata", "labels") as? [String: String])
        let service = try Self.document("service.yaml", kind: "Service")
        XCTAssertEqual(Self.at(service, "spec", "ports", 0, "port") as? Int, 8080)
        XCTAssertEqual(Self.at(service, "spec", "ports", 0, "targetPort") as? String, "http")
        XCTAssertEqual(Self.at(service, "spec", "ports", 0, "appProtocol") as? String, "kubernetes.io/h2c")
        let pdb = try Self.document("pdb.yaml", kind: "PodDisruptionBudget")
        XCTAssertEqual(pdb["apiVersion"] as? String, "policy/v1")
        for (name, selector) in [("Service", Self.at(service, "spec", "selector")),
                                 ("PodDisruptionBudget", Self.at(pdb, "spec", "selector", "matchLabels"))] {
            let s = try XCTUnwrap(selector as? [String: String], "\(name) has no selector")
            XCTAssertFalse(s.isEmpty)
            XCTAssertTrue(s.allSatisfy { labels[$0.key] == $0.value }, "\(name) selector \(s) does not select the pods \(labels)")
        }

        // The HPA's Pods metric is the gauge the serving code records, under the name the adapter gives it.
        let hpa = try Self.document("hpa.yaml", kind: "HorizontalPodAutoscaler")
        XCTAssertEqual(hpa["apiVersion"] as? String, "autoscaling/v2")
        XCTAssertEqual(Self.at(hpa, "spec", "scaleTargetRef", "name") as? String, "glimpse")
        let metrics = Self.at(hpa, "spec", "metrics") as? [[String: Any]] ?? []
        let pods = try XCTUnwrap(metrics.first { $0["type"] as? String == "Pods" }, "no Pods metric")
        let name = Self.at(pods, "pods", "metric", "name") as? String
        XCTAssertEqual(name, GlimpseMetrics.queueDepth)
        let adapter = try Self.document("prometheus-adapter-rules.yaml", kind: "ConfigMap")
        let rule = Self.at(adapter, "parsedData", "config.yaml", "rules", 0)
        XCTAssertEqual(Self.at(rule, "name", "as") as? String, name)
        XCTAssertTrue((Self.at(rule, "seriesQuery") as? String ?? "").hasPrefix(GlimpseMetrics.queueDepth + "{"))
        XCTAssertEqual(Self.at(rule, "resources", "overrides", "pod", "resource") as? String, "pod")
    }

    func testKServeRuntimeAndInferenceService() throws {
        let runtime = try Self.document("kserve.yaml", kind: "ServingRuntime")
        XCTAssertEqual(runtime["apiVersion"] as? String, "serving.kserve.io/v1alpha1")
        XCTAssertEqual(Self.at(runtime, "spec", "protocolVersions") as? [String], ["v2"])
        let formats = (Self.at(runtime, "spec", "supportedModelFormats") as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }
        XCTAssertTrue(formats.contains("onnx"))
        let c = try Self.container(Self.at(runtime, "spec"), named: "kserve-container")
        XCTAssertEqual(Self.at(c, "readinessProbe", "httpGet", "path") as? String, "/v2/health/ready")
        XCTAssertEqual(Self.at(c, "livenessProbe", "httpGet", "path") as? String, "/v2/health/live")
        // The same server settings as the Deployment, reading the model folder KServe's storage initializer fills.
        let args = c["args"] as? [String] ?? []
        XCTAssertEqual(Self.flag(args, "--models"), "/mnt/models")
        XCTAssertEqual(Self.at(c, "ports", 0, "containerPort") as? Int, Int(Self.flag(args, "--port") ?? ""))
        let deployment = try Self.container(Self.at(try Self.document("deployment.yaml", kind: "Deployment"), "spec", "template", "spec"),
                                            named: "glimpse")
        XCTAssertEqual(args.map { $0 == "/mnt/models" ? "/models" : $0 }, deployment["args"] as? [String])

        let service = try Self.document("kserve.yaml", kind: "InferenceService")
        XCTAssertEqual(service["apiVersion"] as? String, "serving.kserve.io/v1beta1")
        XCTAssertEqual(Self.at(service, "spec", "predictor", "model", "runtime") as? String, Self.at(runtime, "metadata", "name") as? String)
        XCTAssertEqual(Self.at(service, "spec", "predictor", "model", "modelFormat", "name") as? String, "onnx")
        XCTAssertEqual(Self.at(service, "spec", "predictor", "model", "protocolVersion") as? String, "v2")
        let uri = Self.at(service, "spec", "predictor", "model", "storageUri") as? String ?? ""
        XCTAssertTrue(["pvc://", "gs://", "s3://", "https://"].contains { uri.hasPrefix($0) }, uri)
    }

    /// The real executable with the Deployment's flags (on loopback):
    /// it accepts them, every probe path of the manifests answers 200 over HTTP/1.1 as the kubelet asks,
    /// and /metrics exports the HPA's metric once a request has been queued.
    func testServerStartsWithTheManifestFlagsAndAnswersTheirProbes() throws {
        let deployment = try Self.document("deployment.yaml", kind: "Deployment")
        let c = try Self.container(Self.at(deployment, "spec", "template", "spec"), named: "glimpse")
        var args = c["args"] as? [String] ?? []
        for fixed in ["--host", "--port", "--models"] {  // GlimpseProcess picks the address; the image's folder is models/
            if let i = args.firstIndex(of: fixed) { args.removeSubrange(i...(i + 1)) }
        }
        // One small model keeps the debug start short; EmbeddedModelsTests serves the whole of models/.
        let models = try temporaryFolder("k8s-models")
        try FileManager.default.createSymbolicLink(atPath: models.appending("mnist-8.onnx").path,
                                                   withDestinationPath: try SharedData.path("models/mnist-8.onnx"))
        try #"{"preprocessing": "mnist"}"#.write(to: models.appending("mnist-8.json"), atomically: true, encoding: .utf8)
        let server = try GlimpseProcess(arguments: ["--models", models.path] + args)
        defer { server.stop() }
        let runtime = try Self.container(Self.at(try Self.document("kserve.yaml", kind: "ServingRuntime"), "spec"), named: "kserve-container")
        var paths: [String] = []
        for (container, probe) in [(c, "startupProbe"), (c, "readinessProbe"), (c, "livenessProbe"),
                                   (runtime, "readinessProbe"), (runtime, "livenessProbe")] {
            paths.append(try XCTUnwrap(Self.at(container, probe, "httpGet", "path") as? String, "no \(probe) path"))
        }
        for path in paths {
            XCTAssertEqual(try ExternalClient.curl(server.base + path, http2: false).status, 200, path)
        }
        let image = try SharedData.data("images/digits/torchserve_3.png")
        XCTAssertEqual(try ExternalClient.curl(server.base + "/rpc", body: RPC.classifyBody(image: image, model: "mnist-8")).status, 200)
        let metricsPath = (Self.at(deployment, "spec", "template", "metadata", "annotations") as? [String: String])?["prometheus.io/path"]
        let metrics = try ExternalClient.curl(server.base + (metricsPath ?? "?"), http2: false)
        XCTAssertEqual(metrics.status, 200)
        let hpa = try Self.document("hpa.yaml", kind: "HorizontalPodAutoscaler")
        let name = try XCTUnwrap(Self.at(hpa, "spec", "metrics", 0, "pods", "metric", "name") as? String)
        let series = String(decoding: metrics.body, as: UTF8.self).split(separator: "\n").filter { $0.hasPrefix(name + "{model=") }
        XCTAssertFalse(series.isEmpty, "no \(name){model=...} series in /metrics")
        // A second SIGTERM cuts the drain delay short (the kubelet sends one; an operator may send another).
        kill(server.process.processIdentifier, SIGTERM)
        Thread.sleep(forTimeInterval: 0.3)
        XCTAssertEqual(try ExternalClient.curl(server.base + "/readyz", http2: false).status, 503, "not ready once signalled")
        let signalled = Date()
        kill(server.process.processIdentifier, SIGTERM)
        XCTAssertEqual(server.stop(timeout: 10), 0, server.log.suffix(500).description)
        XCTAssertLessThan(Date().timeIntervalSince(signalled), 3, "the second signal started the drain at once")
    }
}

// MARK: - Validators and the parsed manifests

extension KubernetesManifestTests {
    static let validatePy = folder.appendingPathComponent("validate.py").path
    /// A validator that runs longer than this is killed (both finish in a few seconds).
    static let toolTimeout: TimeInterval = 120

    /// Every `deploy/k8s/*.yaml`, sorted.
    static func manifests() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".yaml") }.sorted()
            .map { folder.appendingPathComponent($0).path }
    }

    /// A tool of one of the virtual environments `scripts/setup.sh --test` makes under `.build`.
    static func venvTool(_ venv: String, _ name: String) throws -> String {
        let path = root.appendingPathComponent(".build/\(venv)/bin/\(name)").path
        guard FileManager.default.isExecutableFile(atPath: path) else {
            throw TestServerError(description: "\(path) is missing: run scripts/setup.sh --test (it makes .build/\(venv))")
        }
        return path
    }

    /// kubernetes-validate with unknown fields rejected (`--strict`; without it a misspelled field passes).
    static func kubernetesValidate(_ files: [String]) throws -> (status: Int32, output: String) {
        try run(try venvTool("k8s-venv", "kubernetes-validate"), ["--strict"] + kubernetesVersions.flatMap { ["-k", $0] } + files)
    }

    /// Runs a tool from the repository root with stdout and stderr together; killed after `toolTimeout`.
    static func run(_ tool: String, _ arguments: [String]) throws -> (status: Int32, output: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: tool)
        p.arguments = arguments
        p.currentDirectoryURL = root
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = pipe
        p.standardInput = FileHandle.nullDevice
        try p.run()
        let killer = DispatchWorkItem { if p.isRunning { p.terminate() } }
        DispatchQueue.global().asyncAfter(deadline: .now() + toolTimeout, execute: killer)
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        killer.cancel()
        if p.terminationReason == .uncaughtSignal {
            throw TestServerError(description: "\(tool) \(arguments.joined(separator: " ")) killed (signal \(p.terminationStatus)):\n\(output)")
        }
        return (p.terminationStatus, output)
    }

    /// Every document of every manifest, by file name, as `validate.py --dump` parses them (PyYAML).
    static func dump() throws -> [String: [[String: Any]]] {
        let out = try run(try venvTool("kserve-venv", "python"), [validatePy, "--dump"] + (try manifests()))
        guard out.status == 0, let parsed = try JSONSerialization.jsonObject(with: Data(out.output.utf8)) as? [String: [[String: Any]]] else {
            throw TestServerError(description: "validate.py --dump failed (\(out.status)):\n\(out.output)")
        }
        return parsed
    }

    static func document(_ file: String, kind: String) throws -> [String: Any] {
        guard let doc = try dump()[file]?.first(where: { $0["kind"] as? String == kind }) else {
            throw TestServerError(description: "no \(kind) in deploy/k8s/\(file)")
        }
        return doc
    }

    /// The container `name` of a pod spec (or a ServingRuntime's spec).
    static func container(_ spec: Any?, named name: String) throws -> [String: Any] {
        guard let c = (at(spec, "containers") as? [[String: Any]])?.first(where: { $0["name"] as? String == name }) else {
            throw TestServerError(description: "no container \(name)")
        }
        return c
    }

    /// `value` followed through map keys (String) and list indices (Int).
    static func at(_ value: Any?, _ path: Any...) -> Any? {
        path.reduce(value) { v, step in
            if let key = step as? String { return (v as? [String: Any])?[key] }
            guard let i = step as? Int, let list = v as? [Any], list.indices.contains(i) else { return nil }
            return list[i]
        }
    }

    /// The value after `name` in an argument list (`--port 8080`).
    static func flag(_ args: [String], _ name: String) -> String? {
        guard let i = args.firstIndex(of: name), i + 1 < args.count else { return nil }
        return args[i + 1]
    }
}
