import ArgumentParser
import Foundation
import GlimpseLoad

/// What `glimpse-load` was asked to do: the options of `GlimpseLoadCommand` as a plain value, filled by
/// ArgumentParser or, for plain command lines, by `FastArguments` (same defaults, same checks, same run).
struct LoadOptions {
    var host = "127.0.0.1"
    var port = 8080
    var tls = false
    var insecure = false
    var cacert: String?
    var connections = 1
    var threads = 1
    var concurrency: String?
    var rate: String?
    var poisson = false
    var duration = 10.0
    var warmup = 1.0
    var maxRequests = 1_000_000
    var timeout = 30.0
    var maxOutstanding = 10_000
    var seed: UInt64 = 1
    var images: String?
    var labels: String?
    var body: String?
    var path = "/rpc"
    var method = "GET"
    var model = "squeezenet1.1"
    var deadlineMs: Int?
    var sloMs: Double?
    var rateSteps: String?
    var topK = 5
    var crop = "center"
    var imagesPerCall = 1
    var rpcBatch = 1
    /// `jsonrpc` (classify on --path) or `v2` (Open Inference Protocol infer on /v2/models/{model}/infer).
    var protocolName = "jsonrpc"
    /// v2: the BYTES input the image goes in (default: the first BYTES input of the model's metadata).
    var v2Input: String?
    var csv: String?
    var json: String?
    var svg: String?
    var quiet = false

    func makePlan() throws -> LoadPlan {
        var base = LoadConfiguration(host: host, port: port, connections: connections, duration: duration, warmup: warmup,
                                     maxRequests: maxRequests, requestTimeout: timeout, maxOutstandingPerConnection: maxOutstanding,
                                     seed: seed, threads: threads, tls: tlsOptions)
        base.sloMs = effectiveSLOMs
        base.rateSteps = try steps()
        let source: LoadPlan.Source
        if images != nil && body != nil { throw LoadConfigError("give --images or --body, not both") }
        if try loadProtocol() == .v2 {
            source = try v2Source()
        } else if let labels {
            if body != nil { throw LoadConfigError("--labels goes with classify calls, not --body") }
            source = .labelled(labels: labels, images: images, ClassifyOptions(model: model, topK: topK, crop: crop, deadlineMs: deadlineMs,
                                                                               imagesPerCall: imagesPerCall, rpcBatch: rpcBatch), seed: seed)
        } else if let images {
            source = .images(images, ClassifyOptions(model: model, topK: topK, crop: crop, deadlineMs: deadlineMs,
                                                     imagesPerCall: imagesPerCall, rpcBatch: rpcBatch))
        } else if let body {
            source = .bodyFile(body)
        } else {
            source = .plain(method: method.uppercased())
        }
        let rates = try rate.map(LoadPlan.parseRates) ?? []
        if rateSteps != nil && rates.count != 1 { throw LoadConfigError("--rate-steps needs one --rate (the rate before the first step)") }
        let levels = try concurrency.map(LoadPlan.parseIntegers) ?? (rates.isEmpty ? [max(connections, 1)] : [])
        return try LoadPlan.make(base: base, concurrency: levels, rates: rates, poisson: poisson, source: source, path: path)
    }

    func loadProtocol() throws -> LoadProtocol {
        guard let p = LoadProtocol(rawValue: protocolName) else { throw LoadConfigError("--protocol is jsonrpc or v2, got \(protocolName)") }
        if p == .v2 {
            if body != nil { throw LoadConfigError("--protocol v2 sends images (--images or --labels), not --body") }
            if imagesPerCall != 1 || rpcBatch != 1 { throw LoadConfigError("--protocol v2 sends one image per request (no --images-per-call, --rpc-batch)") }
        } else if v2Input != nil {
            throw LoadConfigError("--v2-input goes with --protocol v2")
        }
        return p
    }

    /// v2: the model's tensor names from its metadata (read once), then the images or labelled images.
    func v2Source() throws -> LoadPlan.Source {
        let options = ClassifyOptions(model: model, topK: topK, crop: crop, deadlineMs: deadlineMs)
        try options.validate()
        guard labels != nil || images != nil else { throw LoadConfigError("--protocol v2 needs --images or --labels") }
        let names = try V2TensorNames.fetch(host: host, port: port, tls: tlsOptions, model: model, input: v2Input)
        if let labels { return .v2Labelled(labels: labels, images: images, options, names, seed: seed) }
        return .v2Images(images ?? "", options, names)
    }

    /// The latency objective: `--slo-ms`, else the calls' `--deadline-ms` (nil: none).
    var effectiveSLOMs: Double? { sloMs ?? deadlineMs.map(Double.init) }

    func steps() throws -> [RateStep] { try rateSteps.map(RateStep.parseList) ?? [] }

    /// TLS settings from `--tls`, `--insecure` and `--cacert` (nil: h2c).
    var tlsOptions: TLSOptions? {
        tls ? TLSOptions(verifyCertificate: !insecure, caFile: cacert) : nil
    }

    func validate() throws {
        if !tls && (insecure || cacert != nil) { throw ValidationError("--insecure and --cacert apply to --tls") }
        do { _ = try makePlanBounds() } catch let error as LoadConfigError { throw ValidationError(error.message) }
    }

    /// Bounds only (no file reads), so `--help`-style validation stays cheap.
    private func makePlanBounds() throws -> Bool {
        var c = LoadConfiguration(host: host, port: port, connections: connections, duration: duration, warmup: warmup,
                                  maxRequests: maxRequests, requestTimeout: timeout, maxOutstandingPerConnection: maxOutstanding,
                                  threads: threads, tls: tlsOptions)
        c.sloMs = effectiveSLOMs
        c.mode = .closed(concurrency: max(connections, 1))
        try c.validate()
        let rateSteps = try steps()
        _ = try loadProtocol()
        try ClassifyOptions(model: model, topK: topK, crop: crop, deadlineMs: deadlineMs, imagesPerCall: imagesPerCall,
                            rpcBatch: rpcBatch).validate()
        let rates = try rate.map(LoadPlan.parseRates) ?? []
        if !rateSteps.isEmpty && rates.count != 1 { throw LoadConfigError("--rate-steps needs one --rate (the rate before the first step)") }
        for r in rates {
            c.mode = poisson ? .poisson(r) : .constantRate(r)
            c.rateSteps = rateSteps
            try c.validate()
        }
        c.rateSteps = []
        for k in try concurrency.map(LoadPlan.parseIntegers) ?? [] { c.mode = .closed(concurrency: k); try c.validate() }
        return true
    }

    func run() throws {
        let plan: LoadPlan
        do { plan = try makePlan() } catch let error as LoadConfigError { throw ValidationError(error.message) }
        let progress = ProgressLine(enabled: !quiet && isatty(STDERR_FILENO) != 0)
        var results: [RunResult] = []
        for mode in plan.modes {
            var config = plan.configuration
            config.mode = mode
            let result = try LoadRunner.run(config, corpus: plan.corpus) { elapsed, done, failed in
                progress.update(label: mode.label, elapsed: elapsed, completed: done, failed: failed)
            }
            progress.finish()
            results.append(result)
        }
        print(SummaryTable.render(results), terminator: "")
        if let csv { try FileReports.write(FileReports.csv(results), to: csv) }
        if let json { try FileReports.json(results).write(to: URL(fileURLWithPath: json)) }
        if let svg, let first = results.first {
            let chart = results.count > 1 ? SVGChart.sweep(results) : SVGChart.timeline(first)
            try FileReports.write(chart.render(), to: svg)
        }
        if results.allSatisfy({ $0.succeeded == 0 }) { throw ExitCode(2) }
    }
}

/// A parser for plain command lines: `--name value`, `--name=value`, `-c value`, `-t value` and the
/// flags, each option at most once, every value well formed. It skips ArgumentParser's reflection over
/// the command (milliseconds of CPU at start-up); anything else (help, a mistake, an unusual spelling)
/// returns nil and goes to ArgumentParser, which parses and reports exactly as before.
enum FastArguments {
    static func parse(_ arguments: ArraySlice<String>) -> LoadOptions? {
        var o = LoadOptions()
        var seen = Set<String>()
        var i = arguments.startIndex
        while i < arguments.endIndex {
            let token = arguments[i]
            i += 1
            var name: String
            var inline: String?
            if token.hasPrefix("--") {
                name = String(token.dropFirst(2))
                if let eq = name.firstIndex(of: "=") {
                    inline = String(name[name.index(after: eq)...])
                    name = String(name[..<eq])
                }
            } else if token == "-c" {
                name = "connections"
            } else if token == "-t" {
                name = "threads"
            } else {
                return nil
            }
            guard !name.isEmpty, seen.insert(name).inserted else { return nil }
            if ["poisson", "quiet", "tls", "insecure"].contains(name) {
                guard inline == nil else { return nil }
                switch name {
                case "poisson": o.poisson = true
                case "quiet": o.quiet = true
                case "tls": o.tls = true
                default: o.insecure = true
                }
                continue
            }
            let value: String
            if let inline {
                value = inline
            } else {
                guard i < arguments.endIndex else { return nil }
                value = arguments[i]
                i += 1
            }
            guard !value.hasPrefix("-") else { return nil }
            switch name {
            case "host": o.host = value
            case "port": guard let v = Int(value) else { return nil }; o.port = v
            case "cacert": o.cacert = value
            case "connections": guard let v = Int(value) else { return nil }; o.connections = v
            case "threads": guard let v = Int(value) else { return nil }; o.threads = v
            case "concurrency": o.concurrency = value
            case "rate": o.rate = value
            case "duration": guard let v = Double(value) else { return nil }; o.duration = v
            case "warmup": guard let v = Double(value) else { return nil }; o.warmup = v
            case "max-requests": guard let v = Int(value) else { return nil }; o.maxRequests = v
            case "timeout": guard let v = Double(value) else { return nil }; o.timeout = v
            case "max-outstanding": guard let v = Int(value) else { return nil }; o.maxOutstanding = v
            case "seed": guard let v = UInt64(value) else { return nil }; o.seed = v
            case "images": o.images = value
            case "labels": o.labels = value
            case "body": o.body = value
            case "path": o.path = value
            case "method": o.method = value
            case "model": o.model = value
            case "deadline-ms": guard let v = Int(value) else { return nil }; o.deadlineMs = v
            case "slo-ms": guard let v = Double(value) else { return nil }; o.sloMs = v
            case "rate-steps": o.rateSteps = value
            case "top-k": guard let v = Int(value) else { return nil }; o.topK = v
            case "crop": o.crop = value
            case "images-per-call": guard let v = Int(value) else { return nil }; o.imagesPerCall = v
            case "rpc-batch": guard let v = Int(value) else { return nil }; o.rpcBatch = v
            case "csv": o.csv = value
            case "json": o.json = value
            case "svg": o.svg = value
            case "protocol": o.protocolName = value
            case "v2-input": o.v2Input = value
            default: return nil
            }
        }
        // The short spellings are the same options as the long ones.
        return o
    }
}
