import CNGHTTP2

/// A request's header list laid out once as an `nghttp2_nv` array (nghttp2 copies it on submit),
/// so a load run builds each distinct header block once instead of once per request.
public final class H2HeaderBlock: @unchecked Sendable {
    let nva: UnsafeMutablePointer<nghttp2_nv>
    let count: Int
    private let storage: UnsafeMutablePointer<UInt8>

    public convenience init(_ headers: [(String, String)]) {
        self.init(headers, borrowed: false)
    }

    /// `borrowed`: nghttp2 points at this block's bytes instead of copying them per request
    /// (NGHTTP2_NV_FLAG_NO_COPY_NAME/VALUE); only for a block kept alive as long as its connection's
    /// session may serialize requests built from it.
    init(_ headers: [(String, String)], borrowed: Bool) {
        let flags = borrowed ? UInt8(NGHTTP2_NV_FLAG_NO_COPY_NAME.rawValue | NGHTTP2_NV_FLAG_NO_COPY_VALUE.rawValue)
                             : UInt8(NGHTTP2_NV_FLAG_NONE.rawValue)
        var total = 0
        for (name, value) in headers { total += name.utf8.count + value.utf8.count }
        storage = .allocate(capacity: max(total, 1))
        nva = .allocate(capacity: max(headers.count, 1))
        count = headers.count
        var offset = 0
        for (i, (name, value)) in headers.enumerated() {
            let n = H2HeaderBlock.copy(name, to: storage + offset)
            let v = H2HeaderBlock.copy(value, to: storage + offset + n)
            (nva + i).initialize(to: nghttp2_nv(name: storage + offset, value: storage + offset + n, namelen: n, valuelen: v,
                                                flags: flags))
            offset += n + v
        }
    }

    deinit {
        nva.deinitialize(count: count)
        nva.deallocate()
        storage.deallocate()
    }

    private static func copy(_ string: String, to dest: UnsafeMutablePointer<UInt8>) -> Int {
        var string = string
        return string.withUTF8 { utf8 in
            if let base = utf8.baseAddress { dest.update(from: base, count: utf8.count) }
            return utf8.count
        }
    }
}
