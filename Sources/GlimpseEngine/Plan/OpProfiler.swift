import Foundation
import GlimpseTensor

/// Optional per-operator timing, enabled with `GLIMPSE_PROFILE=1`. Totals per label are printed to
/// stderr at exit (largest first). Off by default: `execute` then takes the plain loop.
final class OpProfiler: @unchecked Sendable {
    static let enabled = ProcessInfo.processInfo.environment["GLIMPSE_PROFILE"] != nil
    static let shared = OpProfiler()

    private let lock = NSLock()
    private var totals: [String: (ns: UInt64, calls: Int)] = [:]
    private var flopsOf: [String: Int] = [:]

    private init() {
        if OpProfiler.enabled { atexit { OpProfiler.shared.report() } }
    }

    @inline(__always)
    static func now() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec)
    }

    func record(_ label: String, _ ns: UInt64) {
        lock.lock()
        let t = totals[label, default: (0, 0)]
        totals[label] = (t.ns + ns, t.calls + 1)
        lock.unlock()
    }

    func report() {
        lock.lock()
        let rows = totals.sorted { $0.value.ns > $1.value.ns }
        lock.unlock()
        let all = rows.reduce(UInt64(0)) { $0 + $1.value.ns }
        var out = "GLIMPSE_PROFILE: total \(Double(all) / 1e6) ms\n"
        var coarse: [String: UInt64] = [:]
        for (label, t) in rows {
            let key = label.range(of: " in[").map { String(label[..<$0.lowerBound]) } ?? label
            coarse[key, default: 0] += t.ns
        }
        for (key, ns) in coarse.sorted(by: { $0.value > $1.value }) {
            out += String(format: "%6.2f%% %10.3f ms  %@\n", Double(ns) / Double(max(all, 1)) * 100, Double(ns) / 1e6, key)
        }
        out += "-- by shape --\n"
        for (label, t) in rows {
            let gflops = Double(flopsOf[label] ?? 0) * Double(t.calls) / Double(max(t.ns, 1))
            out += String(format: "%6.2f%% %10.3f ms %7d calls %6.1f GF/s  %@\n", Double(t.ns) / Double(max(all, 1)) * 100,
                          Double(t.ns) / 1e6, t.calls, gflops, label)
        }
        FileHandle.standardError.write(out.data(using: .utf8)!)
    }

    /// Op type plus the shapes that matter for cost.
    static func label(_ op: any Operator, _ ctx: KernelContext, flops: Int) -> String {
        let ins = ctx.inputs.compactMap { $0 }.map { $0.shape.dims }
        let outs = ctx.outputs.map { $0.shape.dims }
        var s = op.opType
        if let c = op as? ConvOp {
            s += " k\(c.kernel.map(String.init).joined(separator: "x")) s\(c.window.strides.first ?? 1) g\(c.group)"
            if ctx.inputs.count > 3, ctx.inputs[3] != nil { s += " +res" }
            if ctx.inputs.count > 4, ctx.inputs[4] != nil { s += " +scale" }
            if c.pool != nil { s += " +pool" }
        }
        if let x = ins.first { s += " in\(x)" }
        if let y = outs.first { s += " out\(y)" }
        shared.lock.lock()
        shared.flopsOf[s] = flops
        shared.lock.unlock()
        return s
    }
}
