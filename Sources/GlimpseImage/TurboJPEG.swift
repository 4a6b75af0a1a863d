import CTurboJPEG

/// A TurboJPEG status turned into a Swift error at the C boundary.
struct TurboJPEGError: Error {
    enum Severity { case warning, fatal }
    let severity: Severity
    let message: String
}

/// Owns one TurboJPEG decompressor handle (libjpeg-turbo 2.1 `tj*` API; the `tj3*` API is 3.0+).
/// Not thread-safe: one instance per decode or per thread.
final class TurboJPEGDecompressor {
    private let handle: tjhandle

    init() throws {
        guard let h = tjInitDecompress() else {
            throw TurboJPEGError(severity: .fatal, message: "cannot create a TurboJPEG decompressor")
        }
        handle = h
    }

    deinit { tjDestroy(handle) }

    struct Header {
        var width: Int
        var height: Int
        var subsampling: Int32
        var colorspace: Int32
        var isCMYK: Bool { colorspace == Int32(TJCS_CMYK.rawValue) || colorspace == Int32(TJCS_YCCK.rawValue) }
    }

    func header(_ data: UnsafeRawBufferPointer) throws -> Header {
        guard let src = data.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
            throw TurboJPEGError(severity: .fatal, message: "no data")
        }
        var w: Int32 = 0, h: Int32 = 0, subsamp: Int32 = 0, cs: Int32 = 0
        guard tjDecompressHeader3(handle, src, UInt(data.count), &w, &h, &subsamp, &cs) == 0 else { throw lastError() }
        return Header(width: Int(w), height: Int(h), subsampling: subsamp, colorspace: cs)
    }

    /// Decompresses to `width`×`height` (a scaled size from `scaledSize`) with 4 bytes per pixel.
    /// Returns the warning message when libjpeg-turbo only warned (the image is then complete but
    /// possibly damaged, e.g. "Premature end of JPEG file").
    func decompress(_ data: UnsafeRawBufferPointer, into dst: UnsafeMutablePointer<UInt8>, width: Int, height: Int,
                    cmyk: Bool) throws -> String? {
        guard let src = data.baseAddress?.assumingMemoryBound(to: UInt8.self) else {
            throw TurboJPEGError(severity: .fatal, message: "no data")
        }
        let format = cmyk ? Int32(TJPF_CMYK.rawValue) : Int32(TJPF_RGBX.rawValue)
        // LIMITSCANS refuses progressive files with absurd scan counts (a CPU-exhaustion attack).
        let flags = Int32(TJFLAG_LIMITSCANS)
        let rc = tjDecompress2(handle, src, UInt(data.count), dst, Int32(width), Int32(width * 4), Int32(height), format, flags)
        guard rc == 0 else {
            let error = lastError()
            if error.severity == .warning { return error.message }
            throw error
        }
        return nil
    }

    private func lastError() -> TurboJPEGError {
        let message = tjGetErrorStr2(handle).map { String(cString: $0) } ?? "unknown libjpeg-turbo error"
        let severity: TurboJPEGError.Severity = tjGetErrorCode(handle) == Int32(TJERR_WARNING.rawValue) ? .warning : .fatal
        return TurboJPEGError(severity: severity, message: message)
    }

    /// The DCT-domain scaling factors libjpeg-turbo supports (n/8 for n = 1...16), as (num, denom).
    static let scalingFactors: [(num: Int, denom: Int)] = {
        var n: Int32 = 0
        guard let list = tjGetScalingFactors(&n), n > 0 else { return [(1, 1)] }
        return (0..<Int(n)).map { (Int(list[$0].num), Int(list[$0].denom)) }
    }()

    /// TJSCALED: the size of `dimension` decoded at `factor`.
    static func scaled(_ dimension: Int, _ factor: (num: Int, denom: Int)) -> Int {
        (dimension * factor.num + factor.denom - 1) / factor.denom
    }
}
