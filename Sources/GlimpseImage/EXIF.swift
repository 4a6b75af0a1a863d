/// EXIF orientation (tag 0x0112) read from a TIFF-structured EXIF block, with every read
/// bounds-checked. Values outside 1...8, or any malformed block, mean 1 (upright), as in Pillow.
package enum EXIF {
    static let orientationTag: UInt16 = 0x0112

    /// Parses a TIFF header + IFD0, optionally preceded by the "Exif\0\0" identifier.
    package static func orientation(tiff raw: UnsafeRawBufferPointer) -> Int {
        var bytes = raw
        let exifID: [UInt8] = [0x45, 0x78, 0x69, 0x66, 0x00, 0x00]
        if bytes.count >= 6, zip(bytes.prefix(6), exifID).allSatisfy({ $0 == $1 }) {
            bytes = UnsafeRawBufferPointer(rebasing: bytes[6...])
        }
        guard bytes.count >= 8 else { return 1 }
        let little: Bool
        switch (bytes[0], bytes[1]) {
        case (0x49, 0x49): little = true
        case (0x4D, 0x4D): little = false
        default: return 1
        }
        func u16(_ at: Int) -> Int? {
            guard at >= 0, at + 2 <= bytes.count else { return nil }
            let a = Int(bytes[at]), b = Int(bytes[at + 1])
            return little ? a | b << 8 : a << 8 | b
        }
        func u32(_ at: Int) -> Int? {
            guard let lo = u16(little ? at : at + 2), let hi = u16(little ? at + 2 : at) else { return nil }
            return hi << 16 | lo
        }
        guard u16(2) == 42, let ifd = u32(4), let count = u16(ifd) else { return 1 }
        for i in 0..<min(count, 1000) {
            let entry = ifd + 2 + 12 * i
            guard let tag = u16(entry), let type = u16(entry + 2) else { return 1 }
            guard tag == Int(orientationTag) else { continue }
            let value: Int?
            switch type {
            case 3: value = u16(entry + 8)       // SHORT, left-justified in the value field
            case 4: value = u32(entry + 8)       // LONG, seen in some writers
            case 1, 7: value = entry + 8 < bytes.count ? Int(bytes[entry + 8]) : nil  // BYTE / UNDEFINED
            default: value = nil
            }
            if let v = value, (1...8).contains(v) { return v }
            return 1
        }
        return 1
    }

    /// Reads the orientation from the first APP1 "Exif" segment of a JPEG (before the first scan).
    package static func jpegOrientation(_ data: UnsafeRawBufferPointer) -> Int {
        let exifID: [UInt8] = [0x45, 0x78, 0x69, 0x66, 0x00, 0x00]
        guard let payload = JPEGSegments.firstPayload(in: data, marker: 0xE1, startingWith: exifID) else { return 1 }
        return orientation(tiff: payload)
    }

    /// ImageMagick stores EXIF in PNG text chunks "Raw profile type exif":
    /// "\nexif\n<length>\n<hex lines>". Pillow reads it; so do we.
    package static func orientation(rawProfileText text: UnsafeRawBufferPointer) -> Int {
        // Skip the first three lines (empty, "exif", length), then decode hex digits.
        var newlines = 0
        var start = 0
        while start < text.count, newlines < 3 {
            if text[start] == 0x0A { newlines += 1 }
            start += 1
        }
        var decoded: [UInt8] = []
        decoded.reserveCapacity(min((text.count - start) / 2, 1 << 16))
        var high: UInt8?
        for i in start..<text.count {
            let c = text[i]
            let nibble: UInt8
            switch c {
            case 0x30...0x39: nibble = c - 0x30
            case 0x61...0x66: nibble = c - 0x61 + 10
            case 0x41...0x46: nibble = c - 0x41 + 10
            default: continue
            }
            if let h = high { decoded.append(h << 4 | nibble); high = nil } else { high = nibble }
            if decoded.count >= 1 << 16 { break }  // IFD0 sits near the start; bound the work.
        }
        return decoded.withUnsafeBytes { orientation(tiff: $0) }
    }
}
