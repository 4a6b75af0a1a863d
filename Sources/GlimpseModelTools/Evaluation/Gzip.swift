import CZlib
import Foundation

/// gzip (and zlib) decompression through zlib.
enum Gzip {
    static func isCompressed(_ bytes: [UInt8]) -> Bool { bytes.count >= 2 && bytes[0] == 0x1F && bytes[1] == 0x8B }

    /// Inflates a whole gzip stream (concatenated members too). `limit` bounds the output.
    static func decompress(_ input: [UInt8], limit: Int = 4 << 30) throws -> [UInt8] {
        guard !input.isEmpty else { throw DatasetError("gzip data is empty") }
        var stream = z_stream()
        guard glimpse_inflate_init_auto(&stream) == Z_OK else { throw DatasetError("zlib: cannot start inflating") }
        defer { inflateEnd(&stream) }
        var output = [UInt8]()
        output.reserveCapacity(input.count * 4)
        var chunk = [UInt8](repeating: 0, count: 1 << 20)
        try input.withUnsafeBufferPointer { inBuf in
            stream.next_in = UnsafeMutablePointer(mutating: inBuf.baseAddress!)
            stream.avail_in = uInt(inBuf.count)
            while true {
                var status: Int32 = Z_OK
                let produced: Int = chunk.withUnsafeMutableBufferPointer { out in
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(out.count)
                    status = inflate(&stream, Z_NO_FLUSH)
                    return out.count - Int(stream.avail_out)
                }
                output += chunk[0..<produced]
                guard output.count <= limit else { throw DatasetError("gzip data inflates past \(limit) bytes") }
                switch status {
                case Z_STREAM_END:
                    let next = inBuf.count - Int(stream.avail_in)
                    guard stream.avail_in > 0, inBuf[next] == 0x1F else { return }   // another member may follow
                    inflateReset(&stream)
                case Z_OK:
                    continue
                case Z_BUF_ERROR where produced == 0:
                    throw DatasetError("gzip data ends early (truncated file)")
                case Z_BUF_ERROR:
                    continue
                default:
                    throw DatasetError("gzip data is corrupt (zlib status \(status))")
                }
            }
        }
        return output
    }
}
