/// A bounds-checked walk over the marker segments of a JPEG stream, up to the first scan.
package enum JPEGSegments {
    /// The payload (after the 2-byte length) of the first segment with `marker` whose payload
    /// starts with `prefix`, or nil.
    package static func firstPayload(in data: UnsafeRawBufferPointer, marker wanted: UInt8, startingWith prefix: [UInt8]) -> UnsafeRawBufferPointer? {
        var i = 2
        let n = data.count
        while i + 4 <= n {
            guard data[i] == 0xFF else { return nil }
            let marker = data[i + 1]
            if marker == 0xFF { i += 1; continue }                    // fill byte
            if marker == 0xD8 || marker == 0x01 || (0xD0...0xD7).contains(marker) { i += 2; continue }
            if marker == 0xDA || marker == 0xD9 { return nil }         // start of scan / end of image
            let length = Int(data[i + 2]) << 8 | Int(data[i + 3])
            guard length >= 2, i + 2 + length <= n else { return nil }
            if marker == wanted, length - 2 >= prefix.count {
                let payload = UnsafeRawBufferPointer(rebasing: data[(i + 4)..<(i + 2 + length)])
                if zip(payload.prefix(prefix.count), prefix).allSatisfy({ $0 == $1 }) { return payload }
            }
            i += 2 + length
        }
        return nil
    }

    /// True when an Adobe APP14 segment is present (Adobe CMYK JPEGs store inverted CMYK).
    package static func hasAdobeMarker(_ data: UnsafeRawBufferPointer) -> Bool {
        firstPayload(in: data, marker: 0xEE, startingWith: Array("Adobe".utf8)) != nil
    }
}
