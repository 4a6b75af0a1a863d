import CLibFuzzer
import Foundation
import GlimpseModelTools
import GlimpseServing

/// Any bytes as each of the model metadata documents: `models.json` (as the model folder scan reads it,
/// and as the order-keeping tree `models set` rewrites, whose Python-style text must parse back to the
/// same tree), a model's sidecar JSON and the `models pull` catalog. Each reads or throws.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Data(bytes: data, count: size)
    var issues: [ModelDirectory.ScanIssue] = []
    _ = ModelDirectory.readManifest(bytes, path: "models.json", issues: &issues)
    if let tree = try? ManifestJSON.parse(bytes) {
        let text = tree.pythonText()
        guard let again = try? ManifestJSON.parse(Data(text.utf8)) else { fatalError("pythonText does not parse: \(text)") }
        precondition(again == tree, "pythonText changed the tree: \(text)")
    }
    if let document = try? MetadataDocument.decode(bytes, name: "fuzz") {
        _ = try? document.metadata(name: "fuzz", file: "fuzz.onnx")
    }
    _ = try? ModelCatalog(json: bytes)
    return 0
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzz(data!, size) })
