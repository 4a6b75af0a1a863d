import CZlib

/// The rows of a small non-interlaced 8-bit gray or RGB PNG, inflated in one zlib call and unfiltered
/// here. libspng inflates one row per call: for a 28×28 digit that is 28 calls into zlib, each with
/// its own checksum update, 30k of the 39k instructions of the whole decode (callgrind). One call
/// and this unfilter take about a third of that.
///
/// Only files of one plain shape are read: consecutive IDAT chunks, then IEND and nothing after it,
/// every CRC right, a zlib stream that ends exactly with the last row, and filter types 0–4. For
/// anything else `decode` returns false and the caller decodes with libspng, which gives its own
/// answer or error. Rows of more than `maxRowBytes` are left to libspng too: its unfilter is
/// vectorized and a wide row's per-call cost is small against it.
enum PNGRows {
    static let maxRowBytes = 256

    private static let idat: UInt32 = 0x4944_4154   // "IDAT"
    private static let iend: UInt32 = 0x4945_4E44   // "IEND"

    /// Writes `height` rows of `width * channels` bytes, packed, to `out`; false: not read here.
    /// `chunks`: the IDAT payloads when the caller has them (`plainFile`).
    static func decode(_ png: UnsafeRawBufferPointer, width: Int, height: Int, channels: Int, chunks known: [Range<Int>]? = nil,
                       into out: UnsafeMutablePointer<UInt8>) -> Bool {
        let rowBytes = width * channels
        guard width > 0, height > 0, rowBytes <= maxRowBytes, let chunks = known ?? imageData(png) else { return false }
        let filtered = height * (rowBytes + 1)
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: filtered) { scratch in
            guard let rows = scratch.baseAddress, inflate(chunks, from: png, into: rows, count: filtered) else { return false }
            return unfilter(rows, width: width, height: height, bpp: channels, into: out)
        }
    }

    /// A plain file, which `decode` can read without libspng: the PNG signature, an IHDR chunk with
    /// a right CRC declaring 8-bit gray or RGB, not interlaced, the standard compression and filter
    /// method and a size of 1 to 2^31 − 1 each way, then IDAT chunks, IEND and the end (`imageData`).
    /// No ancillary chunk anywhere: no transparency, no EXIF, no text, nothing that could change the
    /// pixels or their orientation. Rows of at most `maxRowBytes` and at most `maxPixels` pixels, both
    /// checked before the image data's CRCs are computed, so a file this path will not decode is not
    /// read twice. nil: the caller reads the file with libspng, whose context alone costs about 6,000
    /// instructions.
    static func plainFile(_ png: UnsafeRawBufferPointer, maxPixels: Int)
        -> (width: Int, height: Int, channels: Int, chunks: [Range<Int>])? {
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        guard png.count >= 8 + 25 + 12, let base = png.baseAddress?.assumingMemoryBound(to: UInt8.self),
              (0..<8).allSatisfy({ png[$0] == signature[$0] }),
              png.bigEndian(at: 8, count: 4) == 13, UInt32(png.bigEndian(at: 12, count: 4)) == 0x4948_4452,   // "IHDR"
              crc32(0, base + 12, 17) == uLong(png.bigEndian(at: 29, count: 4)),
              UInt32(png.bigEndian(at: 37, count: 4)) == idat else { return nil }
        let width = png.bigEndian(at: 16, count: 4), height = png.bigEndian(at: 20, count: 4)
        let depth = png[24], color = png[25], compression = png[26], filter = png[27], interlace = png[28]
        let channels = color == 0 ? 1 : 3
        guard (1...Int(Int32.max)).contains(width), (1...Int(Int32.max)).contains(height),
              depth == 8, color == 0 || color == 2, compression == 0, filter == 0, interlace == 0,
              width * channels <= maxRowBytes, width * height <= maxPixels, let chunks = imageData(png) else { return nil }
        return (width, height, channels, chunks)
    }

    /// The IDAT payloads, when the file is signature, chunks, a run of IDATs, IEND, end; every
    /// IDAT's and IEND's CRC checked (the chunks before were read and checked by libspng already).
    static func imageData(_ png: UnsafeRawBufferPointer) -> [Range<Int>]? {
        let n = png.count
        var i = 8, payloads: [Range<Int>] = []
        while i <= n - 12 {
            let length = png.bigEndian(at: i, count: 4), type = UInt32(png.bigEndian(at: i + 4, count: 4))
            guard length <= n - i - 12 else { return nil }
            let data = (i + 8)..<(i + 8 + length)
            let isIDAT = type == idat
            if isIDAT || !payloads.isEmpty {
                guard isIDAT || (type == iend && length == 0) else { return nil }
                let typeAndData = png.baseAddress.map { $0.assumingMemoryBound(to: UInt8.self) + i + 4 }
                guard crc32(0, typeAndData, uInt(length + 4)) == uLong(png.bigEndian(at: data.upperBound, count: 4)) else { return nil }
                if !isIDAT { return data.upperBound + 4 == n ? payloads : nil }
                payloads.append(data)
            }
            i = data.upperBound + 4
        }
        return nil
    }

    /// Inflates the zlib stream spread over `chunks` into exactly `count` bytes.
    static func inflate(_ chunks: [Range<Int>], from png: UnsafeRawBufferPointer, into rows: UnsafeMutablePointer<UInt8>,
                        count: Int) -> Bool {
        guard let base = png.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return false }
        var stream = z_stream()
        guard glimpse_inflate_init_zlib(&stream) == Z_OK else { return false }
        defer { inflateEnd(&stream) }
        stream.next_out = rows
        stream.avail_out = uInt(count)
        for (k, chunk) in chunks.enumerated() {
            let last = k == chunks.count - 1
            stream.next_in = UnsafeMutablePointer(mutating: base + chunk.lowerBound)
            stream.avail_in = uInt(chunk.count)
            let status = CZlib.inflate(&stream, last ? Z_FINISH : Z_NO_FLUSH)
            if status == Z_STREAM_END { return last && stream.avail_in == 0 && stream.avail_out == 0 }
            guard (status == Z_OK || status == Z_BUF_ERROR) && !last && stream.avail_in == 0 else { return false }
        }
        return false
    }

    /// Undoes PNG's per-row filters (None, Sub, Up, Average, Paeth; `bpp` bytes a pixel).
    static func unfilter(_ rows: UnsafeMutablePointer<UInt8>, width: Int, height: Int, bpp: Int,
                         into out: UnsafeMutablePointer<UInt8>) -> Bool {
        let rowBytes = width * bpp
        for y in 0..<height {
            let filter = rows[y * (rowBytes + 1)]
            let src = rows + y * (rowBytes + 1) + 1, dst = out + y * rowBytes
            let up: UnsafeMutablePointer<UInt8>? = y > 0 ? dst - rowBytes : nil
            switch filter {
            case 0:
                dst.update(from: src, count: rowBytes)
            case 1:
                for x in 0..<rowBytes { dst[x] = src[x] &+ (x >= bpp ? dst[x - bpp] : 0) }
            case 2:
                if let up {
                    for x in 0..<rowBytes { dst[x] = src[x] &+ up[x] }
                } else {
                    dst.update(from: src, count: rowBytes)
                }
            case 3:
                for x in 0..<rowBytes {
                    let left = x >= bpp ? Int(dst[x - bpp]) : 0, above = up.map { Int($0[x]) } ?? 0
                    dst[x] = src[x] &+ UInt8(truncatingIfNeeded: (left + above) >> 1)
                }
            case 4:
                for x in 0..<rowBytes {
                    let a = x >= bpp ? Int(dst[x - bpp]) : 0
                    let b = up.map { Int($0[x]) } ?? 0
                    let c = x >= bpp ? up.map { Int($0[x - bpp]) } ?? 0 : 0
                    dst[x] = src[x] &+ UInt8(truncatingIfNeeded: paeth(a, b, c))
                }
            default:
                return false
            }
        }
        return true
    }

    /// PNG's Paeth predictor: of left, above and upper left, the one nearest left + above − upper left.
    @inline(__always)
    static func paeth(_ a: Int, _ b: Int, _ c: Int) -> Int {
        let p = a + b - c
        let pa = abs(p - a), pb = abs(p - b), pc = abs(p - c)
        if pa <= pb && pa <= pc { return a }
        return pb <= pc ? b : c
    }
}
