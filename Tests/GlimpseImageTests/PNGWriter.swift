import Foundation

/// A minimal PNG encoder for synthetic test images: stored (uncompressed) deflate blocks,
/// 8-bit gray / RGB / RGBA, optional eXIf chunk. Tests only.
enum PNGWriter {
    enum Color: UInt8 { case gray = 0, rgb = 2, rgba = 6 }

    static func encode(width: Int, height: Int, color: Color, pixels: [UInt8], exif: [UInt8]? = nil,
                       exifAfterData: Bool = false) -> Data {
        let channels = color == .gray ? 1 : color == .rgb ? 3 : 4
        precondition(pixels.count == width * height * channels)
        var raw = [UInt8]()
        for y in 0..<height {
            raw.append(0)  // filter: none
            raw.append(contentsOf: pixels[(y * width * channels)..<((y + 1) * width * channels)])
        }
        var out = Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        var ihdr = be32(UInt32(width)) + be32(UInt32(height))
        ihdr += [8, color.rawValue, 0, 0, 0]
        out += chunk("IHDR", ihdr)
        if let exif, !exifAfterData { out += chunk("eXIf", exif) }
        out += chunk("IDAT", zlibStored(raw))
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
