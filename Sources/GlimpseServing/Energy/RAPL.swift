import Foundation

/// Wrap-safe accumulation of a RAPL `energy_uj` counter, which wraps at `max_energy_range_uj`.
public struct WrappingCounter: Sendable, Hashable {
    public let range: UInt64
    public private(set) var last: UInt64?
    public private(set) var totalMicrojoules: UInt64 = 0

    public init(range: UInt64) { self.range = range }

    /// Adds the step from the previous reading to `raw`; a smaller reading means the counter wrapped once.
    public mutating func update(raw: UInt64) {
        defer { last = raw }
        guard let last else { return }
        if raw >= last {
            totalMicrojoules &+= raw - last
        } else if range > last {
            totalMicrojoules &+= (range - last) + raw
        }
    }
}

/// Reads package energy from the Linux powercap interface (`/sys/class/powercap/intel-rapl:N/energy_uj`;
/// AMD's RAPL appears under the same driver name). Only top-level package domains are summed, so
/// sub-domains (core, uncore, dram) are not counted twice.
public final class RAPLReader: @unchecked Sendable {
    struct Domain {
        var energyPath: String
        var counter: WrappingCounter
    }

    private var domains: [Domain]
    private let lock = NSLock()

    /// nil when no readable package domain exists (no RAPL, or `energy_uj` not readable: it is root-only
    /// on kernels since 5.10).
    public init?(root: String = "/sys/class/powercap") {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: root) else { return nil }
        var found: [Domain] = []
        for entry in entries.sorted() {
            // Package domains are "<driver>:<n>"; sub-domains are "<driver>:<n>:<m>".
            let parts = entry.split(separator: ":")
            guard parts.count == 2, parts[0].hasSuffix("rapl") else { continue }
            let dir = (root as NSString).appendingPathComponent(entry)
            let energy = (dir as NSString).appendingPathComponent("energy_uj")
            let rangePath = (dir as NSString).appendingPathComponent("max_energy_range_uj")
            guard let first = RAPLReader.readNumber(energy), let range = RAPLReader.readNumber(rangePath), range > 0 else { continue }
            var counter = WrappingCounter(range: range)
            counter.update(raw: first)
            found.append(Domain(energyPath: energy, counter: counter))
        }
        guard !found.isEmpty else { return nil }
        domains = found
    }

    public var domainCount: Int { domains.count }

    /// Joules consumed by all package domains since this reader was created.
    public func joules() -> Double {
        lock.lock()
        defer { lock.unlock() }
        var total: UInt64 = 0
        for i in domains.indices {
            if let raw = RAPLReader.readNumber(domains[i].energyPath) { domains[i].counter.update(raw: raw) }
            total &+= domains[i].counter.totalMicrojoules
        }
        return Double(total) / 1e6
    }

    static func readNumber(_ path: String) -> UInt64? {
        guard let data = FileManager.default.contents(atPath: path) else { return nil }
        return UInt64(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
    }
}
