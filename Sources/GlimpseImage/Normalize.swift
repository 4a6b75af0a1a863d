import Synchronization

/// Writes 8-bit RGBX rows into the model's input slot: channel order, inversion, scale,
/// mean/std, layout (NCHW/NHWC) and dtype (float32/float16) in one pass, without a full-size copy.
///
/// Each output channel's value is a function of one byte, so it is read from a 256-entry table:
/// table[c][v] = ((invert ? 255 − v : v) × scale − mean[c]) / std[c]. Gray is Pillow's
/// `convert("L")`: L = (R×19595 + G×38470 + B×7471 + 0x8000) >> 16 (ITU-R 601-2).
/// Padding (fit mode, or a crop larger than the image) is 0 after normalization.
struct Normalizer {
    let spec: Preprocessing
    let destination: UnsafeMutableRawPointer
    private var table32: [Float]
    private var table16: [UInt16]
    /// Byte offset in an RGBX pixel of each output channel.
    private let sourceChannel: (Int, Int, Int)
    /// The same formula as the tables, 16 pixels at a time (three-channel float32 NCHW).
    private let affine: AffineRows?

    init(spec: Preprocessing, destination: UnsafeMutableRawPointer) throws {
        let c = spec.channels
        guard spec.mean.count >= c, spec.std.count >= c else {
            throw ImageError(.corrupt, "preprocessing needs \(c) mean and std values, got \(spec.mean.count) and \(spec.std.count)")
        }
        guard spec.dtype == .float32 || spec.dtype == .float16 else {
            throw ImageError(.unsupportedFormat, "model input type \(spec.dtype.rawValue) is not supported; expected float32 or float16")
        }
        self.spec = spec
        self.destination = destination
        (table32, table16) = NormalizerTables.tables(for: spec)
        sourceChannel = spec.channelOrder == .bgr ? (2, 1, 0) : (0, 1, 2)
        affine = c == 3 && spec.dtype == .float32 && spec.layout == .nchw ? AffineRows(spec: spec, sourceChannel: sourceChannel) : nil
    }

    /// Zero-fills the whole slot (used before writing when part of it is padding).
    func zeroAll() {
        destination.initializeMemory(as: UInt8.self, repeating: 0, count: spec.byteCount)
    }

    /// Writes `count` pixels of `row` at output row `y`, starting at output column `x0`.
    func write(row: UnsafePointer<UInt8>, y: Int, x0: Int, count: Int) {
        if spec.dtype == .float16 {
            table16.withUnsafeBufferPointer { write(row, y, x0, count, $0, as: UInt16.self) }
        } else {
            table32.withUnsafeBufferPointer { write(row, y, x0, count, $0, as: Float.self) }
        }
    }

    @inline(__always)
    private func write<T>(_ row: UnsafePointer<UInt8>, _ y: Int, _ x0: Int, _ count: Int,
                          _ table: UnsafeBufferPointer<T>, as: T.Type) {
        guard let lut = table.baseAddress else { return }
        let w = spec.width, h = spec.height
        let out = destination.assumingMemoryBound(to: T.self)
        if spec.channelOrder == .gray {
            // `ImagePipeline.render` has made every pixel its luminance (R = G = B = L) before
            // resizing, and the resize keeps R = G = B, so R is L.
            let dst = out + y * w + x0   // one channel: NCHW and NHWC coincide
            for x in 0..<count { dst[x] = lut[Int(row[x * 4])] }
            return
        }
        let (s0, s1, s2) = sourceChannel
        let t0 = lut, t1 = lut + 256, t2 = lut + 512
        if spec.layout == .nchw {
            let plane = w * h
            let d0 = out + y * w + x0, d1 = d0 + plane, d2 = d1 + plane
            var start = 0
            if T.self == Float.self, let affine {
                start = affine.write(row, count: count, planes: (UnsafeMutableRawPointer(d0), UnsafeMutableRawPointer(d1), UnsafeMutableRawPointer(d2)))
            }
            for x in start..<count {
                let p = row + x * 4
                d0[x] = t0[Int(p[s0])]
                d1[x] = t1[Int(p[s1])]
                d2[x] = t2[Int(p[s2])]
            }
        } else {
            let d = out + (y * w + x0) * 3
            for x in 0..<count {
                let p = row + x * 4
                d[3 * x] = t0[Int(p[s0])]
                d[3 * x + 1] = t1[Int(p[s1])]
                d[3 * x + 2] = t2[Int(p[s2])]
            }
        }
    }
}

/// The normalization tables of each preprocessing seen, built once: a model's requests all share
/// one spec, and building 256 entries a channel cost more than the rest of a 28×28 image's
/// normalization.
enum NormalizerTables {
    private struct Key: Hashable {
        let channels: Int
        let scale: Float
        let mean: [Float]
        let std: [Float]
        let invert: Bool
        let half: Bool
    }

    /// Bounded: specs come from model files; past this many, tables are built per call.
    static let capacity = 64
    private static let cache = Mutex<[Key: (table32: [Float], table16: [UInt16])]>([:])

    static func tables(for spec: Preprocessing) -> (table32: [Float], table16: [UInt16]) {
        let c = spec.channels
        // Specs normally carry exactly `c` values: then the arrays are shared, not copied.
        let key = Key(channels: c, scale: spec.scale, mean: spec.mean.count == c ? spec.mean : Array(spec.mean.prefix(c)),
                      std: spec.std.count == c ? spec.std : Array(spec.std.prefix(c)), invert: spec.invert, half: spec.dtype == .float16)
        if let hit = cache.withLock({ $0[key] }) { return hit }
        let built = build(key)
        cache.withLock { c in
            if c.count < capacity { c[key] = built }
        }
        return built
    }

    private static func build(_ key: Key) -> (table32: [Float], table16: [UInt16]) {
        var t = [Float](repeating: 0, count: 256 * key.channels)
        for ch in 0..<key.channels {
            let std = key.std[ch] == 0 ? 1 : key.std[ch]
            for v in 0..<256 {
                let raw = Float(key.invert ? 255 - v : v)
                t[ch * 256 + v] = (raw * key.scale - key.mean[ch]) / std
            }
        }
        return (t, key.half ? t.map { Float16($0).bitPattern } : [])
    }
}

/// Three-channel float32 NCHW rows computed rather than looked up: each output is the tables' own
/// expression, ((invert ? 255 − v : v) × scale − mean) / std, in the same Float operations, so every
/// value is bit-identical to the table's (IEEE arithmetic is the same in a vector lane; Swift does not
/// fuse the multiply and subtract). Sixteen RGBX pixels are read as words, each channel shifted out,
/// and written as one 64-byte store a plane.
struct AffineRows {
    private let scale: SIMD16<Float>
    private let mean: (SIMD16<Float>, SIMD16<Float>, SIMD16<Float>)
    private let std: (SIMD16<Float>, SIMD16<Float>, SIMD16<Float>)
    private let shift: (UInt32, UInt32, UInt32)
    private let invert: Bool

    init(spec: Preprocessing, sourceChannel: (Int, Int, Int)) {
        func std(_ c: Int) -> SIMD16<Float> { SIMD16(repeating: spec.std[c] == 0 ? 1 : spec.std[c]) }
        scale = SIMD16(repeating: spec.scale)
        mean = (SIMD16(repeating: spec.mean[0]), SIMD16(repeating: spec.mean[1]), SIMD16(repeating: spec.mean[2]))
        self.std = (std(0), std(1), std(2))
        shift = (UInt32(8 * sourceChannel.0), UInt32(8 * sourceChannel.1), UInt32(8 * sourceChannel.2))
        invert = spec.invert
    }

    /// Writes whole blocks of 16 pixels of `row` to the three planes; returns how many pixels it wrote.
    @inline(__always)
    func write(_ row: UnsafePointer<UInt8>, count: Int, planes: (UnsafeMutableRawPointer, UnsafeMutableRawPointer, UnsafeMutableRawPointer)) -> Int {
        var x = 0
        while x + 16 <= count {
            let words = UnsafeRawPointer(row + 4 * x).loadUnaligned(as: SIMD16<UInt32>.self)
            planes.0.storeBytes(of: channel(words, shift.0, mean.0, std.0), toByteOffset: 4 * x, as: SIMD16<Float>.self)
            planes.1.storeBytes(of: channel(words, shift.1, mean.1, std.1), toByteOffset: 4 * x, as: SIMD16<Float>.self)
            planes.2.storeBytes(of: channel(words, shift.2, mean.2, std.2), toByteOffset: 4 * x, as: SIMD16<Float>.self)
            x += 16
        }
        return x
    }

    @inline(__always)
    private func channel(_ words: SIMD16<UInt32>, _ shift: UInt32, _ mean: SIMD16<Float>, _ std: SIMD16<Float>) -> SIMD16<Float> {
        // A byte v as a Float, exactly: 2^23 + v has v in its low mantissa bits, and subtracting 2^23
        // leaves v (the generic integer-to-float vector conversion is not specialized here).
        let magic = ((words &>> shift) & 0xFF) | 0x4B00_0000
        var raw = unsafeBitCast(magic, to: SIMD16<Float>.self) - SIMD16<Float>(repeating: 8_388_608)
        if invert { raw = SIMD16<Float>(repeating: 255) - raw }
        return (raw * scale - mean) / std
    }
}
