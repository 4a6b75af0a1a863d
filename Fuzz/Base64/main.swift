import CLibFuzzer
import Foundation
import GlimpseRPC

private let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

/// Standard padded base64 of `bytes`, written here so the check does not lean on the decoder's own code.
private func encode(_ bytes: [UInt8]) -> String {
    var out: [UInt8] = []
    var i = 0
    while i < bytes.count {
        let n = min(3, bytes.count - i)
        let v = UInt32(bytes[i]) << 16 | (n > 1 ? UInt32(bytes[i + 1]) << 8 : 0) | (n > 2 ? UInt32(bytes[i + 2]) : 0)
        for k in 0..<4 { out.append(k <= n ? alphabet[Int(v >> (18 - 6 * UInt32(k)) & 63)] : UInt8(ascii: "=")) }
        i += 3
    }
    return String(decoding: out, as: UTF8.self)
}

/// Any text (the payload of an `image` field): decoded bytes that encode back to themselves, or an error.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    guard let decoded = try? Base64.decode(text, field: "image") else { return 0 }
    precondition(decoded.count <= text.utf8.count * 3 / 4 + 3, "decoded \(decoded.count) bytes from \(text.utf8.count)")
    let again = try? Base64.decode(encode(decoded), field: "image")
    precondition(again == decoded, "decode(encode(x)) != x")
    return 0
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzz(data!, size) })
