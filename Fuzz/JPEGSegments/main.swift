import CLibFuzzer
import Foundation
import GlimpseImage

/// Any bytes as a JPEG stream (segment walk, EXIF in APP1), as a TIFF block and as ImageMagick's hex text
/// profile: an orientation in 1...8, and a found payload lies inside the input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let raw = UnsafeRawBufferPointer(start: data, count: size)
    for o in [EXIF.jpegOrientation(raw), EXIF.orientation(tiff: raw), EXIF.orientation(rawProfileText: raw)] {
        precondition((1...8).contains(o), "orientation \(o)")
    }
    if let payload = JPEGSegments.firstPayload(in: raw, marker: 0xE1, startingWith: [0x45, 0x78, 0x69, 0x66]) {
        let start = payload.baseAddress.map { $0 - UnsafeRawPointer(data) } ?? 0
        precondition(start >= 0 && start + payload.count <= size, "payload outside the input")
    }
    _ = JPEGSegments.hasAdobeMarker(raw)
    return 0
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzz(data!, size) })
