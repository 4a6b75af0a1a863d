import ArgumentParser
import Foundation
import GlimpseLoad

struct GlimpseLoadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "glimpse-load",
        abstract: "HTTP/2 (h2c, or h2 over TLS with --tls) load generator for Glimpse, built on libnghttp2.",
        discussion: """
        Closed loop:  glimpse-load --port 8080 --images imgs/ --concurrency 1,2,4,8 --duration 10
        Open loop:    glimpse-load --port 8080 --images imgs/ --rate 200 --poisson
        Step load:    glimpse-load --port 8080 --images imgs/ --rate 300 --rate-steps 50@20 --duration 40 --deadline-ms 100
        Accuracy:     glimpse-load --port 8080 --labels cifar10-test/ --model cifar10 --rate 800 --deadline-ms 25
        Open Inference: glimpse-load --port 8080 --images imgs/ --protocol v2 --concurrency 16 -c 2
        Own ceiling:  glimpse-load --port 8080 --path /healthz --method GET --concurrency 256 -c 2
        Over TLS:     glimpse-load --tls --host localhost --port 8443 --cacert ca.pem --images imgs/
        Every run ends at --duration or --max-requests, whichever comes first; --warmup is not counted.
        """
    )

    @Option(help: "Server host.") var host = "127.0.0.1"
    @Option(help: "Server port.") var port = 8080
    @Flag(help: "HTTP/2 over TLS (ALPN h2) instead of h2c; the certificate is verified against the system CA store.") var tls = false
    @Flag(help: "With --tls: accept any server certificate (no verification).") var insecure = false
    @Option(help: "With --tls: trust the CA certificates (or the self-signed certificate) in this PEM file instead of the system store.") var cacert: String?
    @Option(name: [.short, .customLong("connections")], help: "HTTP/2 connections (sharing the --threads event-loop threads).") var connections = 1
    @Option(name: [.short, .customLong("threads")], help: "Event-loop threads; connection i runs on thread i % threads (as h2load -t).") var threads = 1
    @Option(help: "Closed loop: total streams in flight; a list (1,2,4) or range (1-64, powers of two) sweeps.") var concurrency: String?
    @Option(help: "Open loop: requests per second; a comma list sweeps.") var rate: String?
    @Flag(help: "Open loop with Poisson arrivals instead of a constant rate.") var poisson = false
    @Option(name: .customLong("rate-steps"), help: "Open loop: rate changes during the measured period, RATE@SECONDS[,...] (e.g. 300@20: 300 req/s from 20 s on); needs one --rate.") var rateSteps: String?
    @Option(help: "Measured seconds per run.") var duration = 10.0
    @Option(help: "Warm-up seconds per run (not counted).") var warmup = 1.0
    @Option(help: "Maximum measured requests per run.") var maxRequests = 1_000_000
    @Option(help: "Per-request timeout, seconds.") var timeout = 30.0
    @Option(help: "Open loop: max requests outstanding per connection before arrivals are dropped.") var maxOutstanding = 10_000
    @Option(help: "Seed of the Poisson arrivals.") var seed: UInt64 = 1

    @Option(help: "Folder of JPEG/PNG images for classify calls (cycled).") var images: String?
    @Option(help: "True classes, for effective accuracy (correct top-1 answers within the SLO of all offered images): a folder of class-named subfolders of images (then --images is not needed), or a file of IMAGE LABEL lines naming images of the --images folder. The images are sent in an order shuffled by --seed.") var labels: String?
    @Option(help: "JSON body file posted as is.") var body: String?
    @Option(help: "Request path.") var path = "/rpc"
    @Option(help: "Method for a body-less request (with neither --images nor --body).") var method = "GET"
    @Option(help: "Model family or variant.") var model = "squeezenet1.1"
    @Option(name: .customLong("deadline-ms"), help: "deadline_ms of each call.") var deadlineMs: Int?
    @Option(name: .customLong("slo-ms"), help: "Latency objective in ms: successes within it (from the intended send time) are counted against all offered requests (default: --deadline-ms).") var sloMs: Double?
    @Option(name: .customLong("top-k"), help: "top_k of each call.") var topK = 5
    @Option(help: "Crop mode: center, fit or fill.") var crop = "center"
    @Option(name: .customLong("images-per-call"), help: "Images per call (more than 1 uses \"images\": [...]).") var imagesPerCall = 1
    @Option(name: .customLong("rpc-batch"), help: "Calls per request, sent as a JSON-RPC batch array.") var rpcBatch = 1

    @Option(name: .customLong("protocol"), help: "jsonrpc: classify calls on --path; v2: Open Inference Protocol infer requests on /v2/models/{model}/infer, one image each with the binary data extension and the classification extension's --top-k.") var protocolName = "jsonrpc"
    @Option(name: .customLong("v2-input"), help: "With --protocol v2: the BYTES input the image goes in (default: the first BYTES input in the model's metadata).") var v2Input: String?

    @Option(help: "Write the results as CSV.") var csv: String?
    @Option(help: "Write the results as JSON.") var json: String?
    @Option(help: "Write an SVG chart (sweep: latency vs throughput; single run: latency over time).") var svg: String?
    @Flag(help: "No live progress line.") var quiet = false

    /// The options as a plain value (what `run` works from).
    var options: LoadOptions {
        LoadOptions(host: host, port: port, tls: tls, insecure: insecure, cacert: cacert, connections: connections, threads: threads, concurrency: concurrency, rate: rate,
                    poisson: poisson, duration: duration, warmup: warmup, maxRequests: maxRequests, timeout: timeout,
                    maxOutstanding: maxOutstanding, seed: seed, images: images, labels: labels, body: body, path: path, method: method,
                    model: model, deadlineMs: deadlineMs, sloMs: sloMs, rateSteps: rateSteps, topK: topK, crop: crop, imagesPerCall: imagesPerCall,
                    rpcBatch: rpcBatch, protocolName: protocolName, v2Input: v2Input, csv: csv, json: json, svg: svg, quiet: quiet)
    }

    func validate() throws { try options.validate() }

    func run() throws { try options.run() }
}
