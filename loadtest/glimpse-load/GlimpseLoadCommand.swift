import ArgumentParser
import Foundation
import GlimpseLoad

struct GlimpseLoadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "glimpse-load",
        abstract: "HTTP/2 (h2c) load generator for Glimpse, built on libnghttp2.",
        discussion: """
        Closed loop:  glimpse-load --port 8080 --images imgs/ --concurrency 1,2,4,8 --duration 10
        Open loop:    glimpse-load --port 8080 --images imgs/ --rate 200 --poisson
        Own ceiling:  glimpse-load --port 8080 --path /healthz --method GET --concurrency 256 -c 2
        Every run ends at --duration or --max-requests, whichever comes first; --warmup is not counted.
        """
    )

    @Option(help: "Server host.") var host = "127.0.0.1"
    @Option(help: "Server port.") var port = 8080
    @Option(name: [.short, .customLong("connections")], help: "HTTP/2 connections (one thread each).") var connections = 1
    @Option(help: "Closed loop: total streams in flight; a list (1,2,4) or range (1-64, powers of two) sweeps.") var concurrency: String?
    @Option(help: "Open loop: requests per second; a comma list sweeps.") var rate: String?
    @Flag(help: "Open loop with Poisson arrivals instead of a constant rate.") var poisson = false
    @Option(help: "Measured seconds per run.") var duration = 10.0
    @Option(help: "Warm-up seconds per run (not counted).") var warmup = 1.0
    @Option(help: "Maximum measured requests per run.") var maxRequests = 1_000_000
    @Option(help: "Per-request timeout, seconds.") var timeout = 30.0
    @Option(help: "Open loop: max requests outstanding per connection before arrivals are dropped.") var maxOutstanding = 10_000
    @Option(help: "Seed of the Poisson arrivals.") var seed: UInt64 = 1

    @Option(help: "Folder of JPEG/PNG images for classify calls (cycled).") var images: String?
    @Option(help: "JSON body file posted as is.") var body: String?
    @Option(help: "Request path.") var path = "/rpc"
    @Option(help: "Method for a body-less request (with neither --images nor --body).") var method = "GET"
    @Option(help: "Model family or variant.") var model = "squeezenet1.1"
    @Option(name: .customLong("deadline-ms"), help: "deadline_ms of each call.") var deadlineMs: Int?
    @Option(name: .customLong("top-k"), help: "top_k of each call.") var topK = 5
    @Option(help: "Crop mode: center, fit or fill.") var crop = "center"
    @Option(name: .customLong("images-per-call"), help: "Images per call (more than 1 uses \"images\": [...]).") var imagesPerCall = 1
    @Option(name: .customLong("rpc-batch"), help: "Calls per request, sent as a JSON-RPC batch array.") var rpcBatch = 1

    @Option(help: "Write the results as CSV.") var csv: String?
    @Option(help: "Write the results as JSON.") var json: String?
    @Option(help: "Write an SVG chart (sweep: latency vs throughput; single run: latency over time).") var svg: String?
    @Flag(help: "No live progress line.") var quiet = false

    func makePlan() throws -> LoadPlan {
        let base = LoadConfiguration(host: host, port: port, connections: connections, duration: duration, warmup: warmup,
                                     maxRequests: maxRequests, requestTimeout: timeout, maxOutstandingPerConnection: maxOutstanding,
                                     seed: seed)
        let source: LoadPlan.Source
        if images != nil && body != nil { throw LoadConfigError("give --images or --body, not both") }
        if let images {
            source = .images(images, ClassifyOptions(model: model, topK: topK, crop: crop, deadlineMs: deadlineMs,
                                                     imagesPerCall: imagesPerCall, rpcBatch: rpcBatch))
        } else if let body {
            source = .bodyFile(body)
        } else {
            source = .plain(method: method.uppercased())
        }
        let rates = try rate.map(LoadPlan.parseRates) ?? []
        let levels = try concurrency.map(LoadPlan.parseIntegers) ?? (rates.isEmpty ? [max(connections, 1)] : [])
        return try LoadPlan.make(base: base, concurrency: levels, rates: rates, poisson: poisson, source: source, path: path)
    }

    func validate() throws {
        do { _ = try makePlanBounds() } catch let error as LoadConfigError { throw ValidationError(error.message) }
    }

    /// Bounds only (no file reads), so `--help`-style validation stays cheap.
    private func makePlanBounds() throws -> Bool {
        var c = LoadConfiguration(host: host, port: port, connections: connections, duration: duration, warmup: warmup,
                                  maxRequests: maxRequests, requestTimeout: timeout, maxOutstandingPerConnection: maxOutstanding)
        c.mode = .closed(concurrency: max(connections, 1))
        try c.validate()
        try ClassifyOptions(model: model, topK: topK, crop: crop, deadlineMs: deadlineMs, imagesPerCall: imagesPerCall,
                            rpcBatch: rpcBatch).validate()
        for r in try rate.map(LoadPlan.parseRates) ?? [] { c.mode = poisson ? .poisson(r) : .constantRate(r); try c.validate() }
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
