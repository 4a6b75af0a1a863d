import CLibFuzzer
import Foundation
import GlimpseLoad

/// Any bytes as a response body to `glimpse-load`'s inspector. When the byte scanner accepts a body, its
/// reading must be the one `JSONSerialization` gives (the scanner's contract); otherwise the fallback runs.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Array(UnsafeBufferPointer(start: data, count: size))
    var fast = ResponseInspector.inspect(status: 200, body: [])
    guard ResponseInspector.inspect(status: 200, body: body, into: &fast) else { return 0 }
    var reference = ResponseInspector.inspect(status: 200, body: [])
    ResponseInspector.inspectWithFoundation(body: body, into: &reference)
    precondition(fast == reference, "scanner \(fast) != JSONSerialization \(reference) for \(String(decoding: body, as: UTF8.self))")
    return 0
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzz(data!, size) })
