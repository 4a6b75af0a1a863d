/// Each variant's CPU per request outside the engine, told apart from windows where several
/// variants served at once.
///
/// The CPU a request costs outside the engine depends on which variant serves it (measured on
/// 2 cores: 155–200 µs per request while only cifar10-small served at its capacity, 390–500 µs
/// while only cifar10-large did, 265–325 µs with the two split): the heavier variant's batches
/// slow the decoding and the HTTP work running beside them on the same cores, and leave more of
/// the workers' time unaccounted between batches. One figure for all requests reads the light
/// variant's capacity low and the heavy one's high, and the split gives the heavy one too little.
///
/// Each window gives one equation: the CPU outside the engine = Σ requests of variant v × o_v.
/// The o_v are the state of a Kalman filter (a random walk: they may drift by `driftNanos` per
/// window), updated by each window in which the process used the cores it gets, so the figures
/// are those of a busy machine, as capacities need. A window where one variant served alone pins
/// its figure; one where two served, the combination, and with one of them known from earlier,
/// the other. A variant no window has told apart keeps a wide uncertainty, and `overhead(of:)`
/// gives nil for it until its standard deviation is under `confidentShare` of its value.
/// Pure: the caller passes the counts.
public struct VariantOverhead: Sendable {
    /// Standard deviation of a variant's figure before any window (ns per request).
    public var priorNanos: Double = 300_000
    /// How far a figure may drift per window (standard deviation, ns per request).
    public var driftNanos: Double = 10_000
    /// Relative noise of one window's CPU reading (standard deviation as a share of the reading).
    public var noiseShare: Double = 0.05
    /// A figure is used once its standard deviation is under this share of it.
    public var confidentShare: Double = 0.2

    private(set) var names: [String] = []
    /// The figures, in µs per request (ns / 1000), and their covariance.
    private var mean: [Double] = []
    private var covariance: [[Double]] = []

    public init() {}

    /// The variant's CPU per request outside the engine (ns), once windows have told it apart.
    public func overhead(of name: String) -> Double? {
        guard let i = names.firstIndex(of: name) else { return nil }
        let m = mean[i], sd = covariance[i][i].squareRoot()
        guard m > 0, sd < confidentShare * m else { return nil }
        return m * 1000
    }

    /// One busy window: the CPU outside the engine (ns) and the requests each variant served in it.
    /// `prior` (ns per request) starts a variant seen for the first time.
    public mutating func observe(nonEngineNanos: Double, requests: [String: Int], prior: Double) {
        let served = requests.filter { $0.value > 0 }
        guard !served.isEmpty, nonEngineNanos >= 0 else { return }
        for name in served.keys.sorted() where !names.contains(name) { add(name, mean: prior / 1000) }
        let k = names.count
        // Drift: every figure may have moved since the last window.
        let drift = (driftNanos / 1000) * (driftNanos / 1000)
        for i in 0..<k { covariance[i][i] += drift }
        // The window's equation in thousands of requests and ms: y = x · mean.
        let x = names.map { Double(served[$0] ?? 0) / 1000 }
        let y = nonEngineNanos / 1e6
        let px = (0..<k).map { i in (0..<k).reduce(0.0) { $0 + covariance[i][$1] * x[$1] } }
        let noise = (noiseShare * y) * (noiseShare * y) + 1e-6
        let s = zip(x, px).reduce(noise) { $0 + $1.0 * $1.1 }
        let predicted = zip(x, mean).reduce(0.0) { $0 + $1.0 * $1.1 }
        let gain = px.map { $0 / s }
        for i in 0..<k { mean[i] += gain[i] * (y - predicted) }
        for i in 0..<k {
            for j in 0..<k { covariance[i][j] -= gain[i] * px[j] }
        }
        // Keep the covariance symmetric, and no variance above the prior's: a figure no window has
        // pinned for long is as uncertain as a new one, no more (scaling its row and column keeps
        // the matrix a covariance).
        let cap = (priorNanos / 1000) * (priorNanos / 1000)
        for i in 0..<k {
            for j in (i + 1)..<max(i + 1, k) {
                let v = (covariance[i][j] + covariance[j][i]) / 2
                covariance[i][j] = v
                covariance[j][i] = v
            }
        }
        for i in 0..<k where covariance[i][i] > cap {
            let c = (cap / covariance[i][i]).squareRoot()
            for j in 0..<k {
                covariance[i][j] *= c
                covariance[j][i] *= c
            }
        }
    }

    /// Forgets the variants not in `loaded` (unloaded models).
    public mutating func keep(only loaded: Set<String>) {
        let kept = names.indices.filter { loaded.contains(names[$0]) }
        guard kept.count != names.count else { return }
        names = kept.map { names[$0] }
        mean = kept.map { mean[$0] }
        covariance = kept.map { i in kept.map { covariance[i][$0] } }
    }

    private mutating func add(_ name: String, mean m: Double) {
        names.append(name)
        mean.append(m)
        for i in covariance.indices { covariance[i].append(0) }
        var row = [Double](repeating: 0, count: names.count)
        row[names.count - 1] = (priorNanos / 1000) * (priorNanos / 1000)
        covariance.append(row)
    }
}
