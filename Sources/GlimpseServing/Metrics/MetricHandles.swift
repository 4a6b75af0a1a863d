import Foundation
import Metrics

/// The metrics backend the serving library records into, injected by whoever builds the service:
/// the executable passes the Prometheus factory it bootstrapped, a test a `MetricsTestKit`
/// `TestMetrics`, and parts built on their own record nothing (`none`).
///
/// Metric objects are kept by label and dimensions, so a hot path (several records per image) does
/// not build a new one every time, which makes the backend look it up, validate its names and sort
/// its labels.
public final class MetricHandles: @unchecked Sendable {
    /// Records nothing.
    public static let none = MetricHandles(factory: NOOPMetricsHandler.instance)

    public let factory: any MetricsFactory

    private struct Key: Hashable {
        let label: String
        let dimensions: [String]
    }

    private let lock = NSLock()
    private var handles: [Key: AnyObject] = [:]
    /// A bound on distinct series kept (dimensions come from model names and error reasons, both
    /// bounded, but a cap keeps a mistake from growing the table without limit).
    private let capacity = 4096

    public init(factory: any MetricsFactory) {
        self.factory = factory
    }

    func handle<T: AnyObject>(_ label: String, _ dimensions: [(String, String)], make: () -> T) -> T {
        var flat: [String] = []
        flat.reserveCapacity(dimensions.count * 2)
        for (k, v) in dimensions {
            flat.append(k)
            flat.append(v)
        }
        let key = Key(label: label, dimensions: flat)
        lock.lock()
        defer { lock.unlock() }
        if let h = handles[key] as? T { return h }
        let h = make()
        if handles.count < capacity { handles[key] = h }
        return h
    }

    func counter(_ label: String, _ dimensions: [(String, String)]) -> Counter {
        handle(label, dimensions) { Counter(label: label, dimensions: dimensions, factory: factory) }
    }

    func floatingPointCounter(_ label: String, _ dimensions: [(String, String)]) -> FloatingPointCounter {
        handle(label, dimensions) { FloatingPointCounter(label: label, dimensions: dimensions, factory: factory) }
    }

    func timer(_ label: String, _ dimensions: [(String, String)]) -> Timer {
        handle(label, dimensions) { Timer(label: label, dimensions: dimensions, factory: factory) }
    }

    func recorder(_ label: String, _ dimensions: [(String, String)]) -> Recorder {
        handle(label, dimensions) { Recorder(label: label, dimensions: dimensions, aggregate: true, factory: factory) }
    }

    func gauge(_ label: String, _ dimensions: [(String, String)]) -> Gauge {
        handle(label, dimensions) { Gauge(label: label, dimensions: dimensions, factory: factory) }
    }

    /// The request counters by their five label values: one look-up per request without the
    /// general table's flattened key array and cast (callgrind: 5,100 instructions a call before).
    private struct RequestKey: Hashable {
        let method, model, variant, outcome, reason: String
    }

    private var requestCounters: [RequestKey: Counter] = [:]

    /// One JSON-RPC call or REST request (`glimpse_requests_total`), for the layers above.
    public func recordRequest(method: String, model: String, variant: String, outcome: String, reason: String) {
        let key = RequestKey(method: method, model: model, variant: variant, outcome: outcome, reason: reason)
        lock.lock()
        let known = requestCounters[key]
        lock.unlock()
        if let known {
            known.increment()
            return
        }
        let made = counter(GlimpseMetrics.requests, [
            ("method", method), ("model", model), ("variant", variant), ("outcome", outcome), ("reason", reason),
        ])
        lock.lock()
        if requestCounters.count < capacity { requestCounters[key] = made }
        lock.unlock()
        made.increment()
    }
}
