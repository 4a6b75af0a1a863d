import Foundation

/// A minimal PNG encoder for synthetic test images: stored (uncompressed) deflate blocks,
/// 8-bit gray / RGB / RGBA, optional eXIf chunk. Tests only.
enum PNGWriter {
    enum Color: UInt8 { case gray = 0, rgb = 2, rgba = 6 }

    /// `filtered`: row y uses filter type y % 5 (None, Sub, Up, Average, Paeth) instead of None.
    /// `idatBytes`: the image data split over IDAT chunks of at most that many bytes.
    static func encode(width: Int, height: Int, color: Color, pixels: [UInt8], exif: [UInt8]? = nil,
                       exifAfterData: Bool = false, filtered: Bool = false, idatBytes: Int? = nil) -> Data {
        let channels = color == .gray ? 1 : color == .rgb ? 3 : 4
        precondition(pixels.count == width * height * channels)
        let rowBytes = width * channels
        var raw = [UInt8]()
        for y in 0..<height {
            let row = Array(pixels[(y * rowBytes)..<((y + 1) * rowBytes)])
            let up = y > 0 ? Array(pixels[((y - 1) * rowBytes)..<(y * rowBytes)]) : [UInt8](repeating: 0, count: rowBytes)
            let type = filtered ? y % 5 : 0
            raw.append(UInt8(type))
            for x in 0..<rowBytes {
                let a = x >= channels ? Int(row[x - channels]) : 0, b = Int(up[x]), c = x >= channels ? Int(up[x - channels]) : 0
                let predictor: Int
                switch type {
                case 1: predictor = a
                case 2: predictor = b
                case 3: predictor = (a + b) / 2
                case 4:
                    let p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c)
                    predictor = pa <= pb && pa <= pc ? a : (pb <= pc ? b : c)
                default: predictor = 0
                }
                raw.append(row[x] &- UInt8(predictor & 0xFF))
            }
        }
        var out = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        var ihdr = be32(UInt32(width)) + be32(UInt32(height))
        ihdr += [8, color.rawValue, 0, 0, 0]
        out += chunk("IHDR", ihdr)
        if let exif, !exifAfterData { out += chunk("eXIf", exif) }
        let stream = zlibStored(raw)
        let step = idatBytes ?? stream.count
        for start in stride(from: 0, to: stream.count, by: step) {
            out += chunk("IDAT", Array(stream[start..<min(start + step, stream.count)]))
        }
        if let exif, exifAfterData { out += chunk("eXIf", exif) }
        out += chunk("IEND", [])
        return out
    }

    static func chunk(_ type: String, _ body: [UInt8]) -> Data {
        let t = Array(type.utf8)
        return Data(be32(UInt32(body.count)) + t + body + be32(crc32(t + body)))
    }

    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

    static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            c ^= UInt32(b)
            for _ in 0..<8 { c = c & 1 != 0 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
        }
        return c ^ 0xFFFF_FFFF
    }

    static func zlibStored(_ data: [UInt8]) -> [UInt8] {
        var out: [UInt8] = [0x78, 0x01]
        var i = 0
        repeat {
            let n = min(65535, data.count - i)
            let final: UInt8 = i + n >= data.count ? 1 : 0
            out += [final, UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8((~n >> 8) & 0xFF)]
            out += data[i..<(i + n)]
            i += n
        } while i < data.count
        var a: UInt32 = 1, b: UInt32 = 0
        for x in data { a = (a + UInt32(x)) % 65521; b = (b + a) % 65521 }
        return out + be32(b << 16 | a)
    }

    /// A big-endian TIFF/EXIF block holding only an orientation tag.
    static func exifOrientation(_ o: UInt16, littleEndian: Bool = false) -> [UInt8] {
        func u16(_ v: UInt16) -> [UInt8] { littleEndian ? [UInt8(v & 0xFF), UInt8(v >> 8)] : [UInt8(v >> 8), UInt8(v & 0xFF)] }
        func u32(_ v: UInt32) -> [UInt8] { littleEndian ? be32(v).reversed() : be32(v) }
        return (littleEndian ? [0x49, 0x49] : [0x4D, 0x4D]) + u16(42) + u32(8) + u16(1)
            + u16(0x0112) + u16(3) + u32(1) + u16(o) + u16(0) + u32(0)
    }
}

/// A synthetic RGB image whose pixels encode their position, for geometry tests.
struct SyntheticImage {
    let width: Int, height: Int
    var pixels: [UInt8]

    init(width: Int, height: Int, _ f: (Int, Int) -> (UInt8, UInt8, UInt8)) {
        self.width = width
        self.height = height
        pixels = []
        pixels.reserveCapacity(width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                let (r, g, b) = f(x, y)
                pixels += [r, g, b]
            }
        }
    }

    func pixel(_ x: Int, _ y: Int) -> (UInt8, UInt8, UInt8) {
        let i = (y * width + x) * 3
        return (pixels[i], pixels[i + 1], pixels[i + 2])
    }

    /// The image as displayed when stored with EXIF `orientation`, inverted: returns what a camera
    /// would store so that applying `orientation` gives back `self`.
    func stored(for orientation: Int) -> SyntheticImage {
        let swaps = orientation >= 5
        let w = swaps ? height : width, h = swaps ? width : height
        return SyntheticImage(width: w, height: h) { sx, sy in
            // Displayed (x, y) of stored (sx, sy), per the EXIF definitions.
            let (x, y): (Int, Int)
            switch orientation {
            case 2: (x, y) = (w - 1 - sx, sy)
            case 3: (x, y) = (w - 1 - sx, h - 1 - sy)
            case 4: (x, y) = (sx, h - 1 - sy)
            case 5: (x, y) = (sy, sx)
            case 6: (x, y) = (h - 1 - sy, sx)
            case 7: (x, y) = (h - 1 - sy, w - 1 - sx)
            case 8: (x, y) = (sy, w - 1 - sx)
            default: (x, y) = (sx, sy)
            }
            return pixel(x, y)
        }
    }

    func png(exifOrientation: Int? = nil, exifAfterData: Bool = false) -> Data {
        PNGWriter.encode(width: width, height: height, color: .rgb, pixels: pixels,
                         exif: exifOrientation.map { PNGWriter.exifOrientation(UInt16($0)) }, exifAfterData: exifAfterData)
    }
}
