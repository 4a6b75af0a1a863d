import CLibFuzzer
import Foundation
import GlimpseEngine
import GlimpseONNX

/// Any bytes as an ONNX file: protobuf reader, importer, graph passes and compilation (no run), or an
/// error. Also read as one TensorProto. libFuzzer's `-malloc_limit_mb` (scripts/fuzz.sh) turns an
/// allocation the file asks for beyond the limit into a finding.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    _ = try? ONNXLoader.load(bytes: bytes, name: "fuzz", options: EngineOptions(threads: 1))
    _ = try? ONNXLoader.decodeTensorProto(bytes: bytes, name: "fuzz")
    return 0
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzz(data!, size) })
