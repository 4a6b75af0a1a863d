/// An owned 8-bit RGBX image (4 bytes per pixel, the 4th byte unused), rows packed.
/// Decoders write into it; the resampler reads from it.
final class PixelBuffer {
    let width: Int
    let height: Int
    let base: UnsafeMutablePointer<UInt8>

    static let bytesPerPixel = 4

    /// Every pixel has R = G = B, so its luminance is R already. Set by the PNG decoder for 8-bit gray
    /// files without transparency; other gray files (JPEG, 16-bit PNG) are converted as before.
    var isGray = false

    /// Allocates width×height×4 bytes; callers check the pixel limit first.
    init(width: Int, height: Int) throws {
        let (pixels, o1) = width.multipliedReportingOverflow(by: height)
        let (bytes, o2) = pixels.multipliedReportingOverflow(by: PixelBuffer.bytesPerPixel)
        guard width > 0, height > 0, !o1, !o2 else {
            throw ImageError(.tooLarge, "image of \(width)x\(height) pixels cannot be allocated")
        }
        self.width = width
        self.height = height
        // 64 extra bytes so that SIMD loads of a row's last pixel may read a little past it.
        base = UnsafeMutableRawPointer.allocate(byteCount: bytes + 64, alignment: 64).bindMemory(to: UInt8.self, capacity: bytes + 64)
        (base + bytes).initialize(repeating: 0, count: 64)
    }

    deinit { base.deallocate() }

    var rowBytes: Int { width * PixelBuffer.bytesPerPixel }

    /// Returns the image as displayed for EXIF `orientation` (1–8), as Pillow's `exif_transpose` does.
    func oriented(_ orientation: Int) throws -> PixelBuffer {
        guard (2...8).contains(orientation) else { return self }
        let w = width, h = height
        let swaps = orientation >= 5
        let out = try PixelBuffer(width: swaps ? h : w, height: swaps ? w : h)
        out.isGray = isGray
        // Source pixel index of output (x, y) = origin + x * dx + y * dy.
        let (origin, dx, dy): (Int, Int, Int)
        switch orientation {
        case 2: (origin, dx, dy) = (w - 1, -1, w)                  // mirror left-right
        case 3: (origin, dx, dy) = ((h - 1) * w + w - 1, -1, -w)   // rotate 180
        case 4: (origin, dx, dy) = ((h - 1) * w, 1, -w)            // mirror top-bottom
        case 5: (origin, dx, dy) = (0, w, 1)                       // transpose
        case 6: (origin, dx, dy) = ((h - 1) * w, -w, 1)            // rotate 90 clockwise
        case 7: (origin, dx, dy) = ((h - 1) * w + w - 1, -w, -1)   // transverse
        default: (origin, dx, dy) = (w - 1, w, -1)                 // 8: rotate 90 counter-clockwise
        }
        let src = UnsafeMutableRawPointer(base).bindMemory(to: UInt32.self, capacity: w * h)
        let dst = UnsafeMutableRawPointer(out.base).bindMemory(to: UInt32.self, capacity: w * h)
        let ow = out.width
        for y in 0..<out.height {
            var s = origin + y * dy
            let row = dst + y * ow
            for x in 0..<ow {
                assert(s >= 0 && s < w * h)
                row[x] = src[s]
                s += dx
            }
        }
        return out
    }

    /// Composites straight (non-premultiplied) alpha in byte 3 onto white and sets byte 3 to 255.
    func compositeAlphaOnWhite() {
        let n = width * height
        var p = base
        for _ in 0..<n {
            let a = UInt32(p[3])
            if a != 255 {
                let inv = 255 - a
                // Round-to-nearest of (c*a + 255*(255-a)) / 255.
                for c in 0..<3 {
                    let v = UInt32(p[c]) * a + 255 * inv
                    p[c] = UInt8(truncatingIfNeeded: (v + 127) / 255)
                }
                p[3] = 255
            }
            p += 4
        }
    }

    /// Replaces R, G and B by Pillow's `convert("L")` luminance, L = (R×19595 + G×38470 + B×7471
    /// + 0x8000) >> 16, so that gray models see Pillow's convert-then-resize order exactly.
    func convertToLuma() {
        let n = width * height
        let words = UnsafeMutableRawPointer(base).bindMemory(to: UInt32.self, capacity: n)
        for i in 0..<n {
            let v = words[i]   // little-endian RGBX
            let r = v & 0xFF, g = (v >> 8) & 0xFF, b = (v >> 16) & 0xFF
            let l = (r &* 19595 &+ g &* 38470 &+ b &* 7471 &+ 0x8000) >> 16
            words[i] = l | l << 8 | l << 16 | 0xFF00_0000
        }
        _ = UnsafeMutableRawPointer(words).bindMemory(to: UInt8.self, capacity: n * 4)
    }
}
