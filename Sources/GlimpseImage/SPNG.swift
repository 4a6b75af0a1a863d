import CSPNG

/// A libspng status turned into a Swift error at the C boundary.
struct SPNGError: Error {
    let code: Int32
    var message: String { spng_strerror(code).map { String(cString: $0) } ?? "libspng error \(code)" }
}

/// Owns one libspng decoder context over a caller-owned buffer (which must outlive it).
final class SPNGDecoder {
    private let ctx: OpaquePointer

    init(_ data: UnsafeRawBufferPointer) throws {
        guard let c = spng_ctx_new(0) else { throw SPNGError(code: Int32(SPNG_EMEM.rawValue)) }
        ctx = c
        try check(spng_set_png_buffer(ctx, data.baseAddress, data.count))
        // Bound ancillary chunk memory (text, EXIF, ICC) so metadata cannot exhaust memory.
        try check(spng_set_chunk_limits(ctx, 4 << 20, 16 << 20))
    }

    deinit { spng_ctx_free(ctx) }

    private func check(_ rc: Int32) throws {
        if rc != 0 { throw SPNGError(code: rc) }
    }

    func ihdr() throws -> spng_ihdr {
        var h = spng_ihdr()
        try check(spng_get_ihdr(ctx, &h))
        return h
    }

    var hasTRNS: Bool {
        var t = spng_trns()
        return spng_get_trns(ctx, &t) == 0
    }

    /// Decodes to 8-bit RGBA (16-bit samples are reduced, palette and gray expanded, tRNS applied).
    func decodeRGBA8(into dst: UnsafeMutableRawPointer, byteCount: Int) throws {
        try decode(format: SPNG_FMT_RGBA8, flags: Int32(SPNG_DECODE_TRNS.rawValue), into: dst, byteCount: byteCount)
    }

    /// Decodes to `format` as libspng writes it (`SPNG_FMT_G8`, `SPNG_FMT_RGB8`, ...).
    func decode(format: spng_format, flags: Int32 = 0, into dst: UnsafeMutableRawPointer, byteCount: Int) throws {
        var size = 0
        try check(spng_decoded_image_size(ctx, Int32(format.rawValue), &size))
        guard size <= byteCount else { throw SPNGError(code: Int32(SPNG_EOVERFLOW.rawValue)) }
        try check(spng_decode_image(ctx, dst, size, Int32(format.rawValue), flags))
    }

    /// The eXIf chunk, if any (valid until the context is freed).
    func exif() -> UnsafeRawBufferPointer? {
        var e = spng_exif()
        guard spng_get_exif(ctx, &e) == 0, let d = e.data, e.length > 0 else { return nil }
        return UnsafeRawBufferPointer(start: d, count: e.length)
    }

    /// tEXt/zTXt/iTXt chunks as (keyword, text) buffers, valid until the context is freed.
    func texts() -> [(keyword: String, text: UnsafeRawBufferPointer)] {
        var n: UInt32 = 0
        guard spng_get_text(ctx, nil, &n) == 0, n > 0, n < 10_000 else { return [] }
        var list = [spng_text](repeating: spng_text(), count: Int(n))
        guard spng_get_text(ctx, &list, &n) == 0 else { return [] }
        return list.prefix(Int(n)).compactMap { t in
            guard let text = t.text else { return nil }
            let keyword = withUnsafeBytes(of: t.keyword) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            return (keyword, UnsafeRawBufferPointer(start: text, count: t.length))
        }
    }
}
