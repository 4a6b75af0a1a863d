/// Where the model input window lies on the (virtually) resized image.
///
/// The source (W×H, upright) is resized to `resizedWidth`×`resizedHeight`; output pixel (x, y)
/// is resized pixel (x + offsetX, y + offsetY). Output pixels outside the resized image are padding.
struct CropGeometry: Equatable {
    var resizedWidth: Int
    var resizedHeight: Int
    var offsetX: Int
    var offsetY: Int
    var outputWidth: Int
    var outputHeight: Int

    /// Output columns / rows that map onto the resized image (the rest is padding).
    var validX: Range<Int> { max(0, -offsetX)..<min(outputWidth, resizedWidth - offsetX) }
    var validY: Range<Int> { max(0, -offsetY)..<min(outputHeight, resizedHeight - offsetY) }

    init(resizedWidth: Int, resizedHeight: Int, offsetX: Int, offsetY: Int, outputWidth: Int, outputHeight: Int) {
        self.resizedWidth = resizedWidth
        self.resizedHeight = resizedHeight
        self.offsetX = offsetX
        self.offsetY = offsetY
        self.outputWidth = outputWidth
        self.outputHeight = outputHeight
    }

    /// - center: Pillow's resize-then-crop, the preprocessing of the shared onnxruntime reference
    ///   (`reference/predictions.json`): short side → s, long side → round(long × s / short) (Python's
    ///   round-half-even), crop offset ⌊(size − crop) / 2⌋; a crop larger than the image is padded.
    ///   torchvision's `Resize` + `CenterCrop` differ by truncating the long side and rounding the
    ///   offset, one pixel apart at most; the reference (and so Glimpse) rounds the size and floors the offset.
    ///   s = `resizeShortSide`, or for nil the crop size (square crops) / the scale that covers the crop.
    /// - fit: scale by min(W/w, H/h) (aspect kept), center, pad the rest.
    /// - fill: stretch to W×H.
    init(sourceWidth w: Int, sourceHeight h: Int, spec: Preprocessing, mode: CropMode) {
        let outW = spec.width, outH = spec.height
        var rw = outW, rh = outH
        switch mode {
        case .fill:
            break
        case .fit:
            let s = min(Double(outW) / Double(w), Double(outH) / Double(h))
            rw = min(outW, max(1, Int((Double(w) * s).rounded())))
            rh = min(outH, max(1, Int((Double(h) * s).rounded())))
        case .center:
            if let short = spec.resizeShortSide ?? (outW == outH ? outW : nil) {
                // Computed as the reference does: s = short / min(w, h), then round(long × s).
                let scale = Double(short) / Double(min(w, h))
                if w <= h {
                    rw = short
                    rh = max(1, Int((Double(h) * scale).rounded(.toNearestOrEven)))
                } else {
                    rh = short
                    rw = max(1, Int((Double(w) * scale).rounded(.toNearestOrEven)))
                }
            } else {
                let s = max(Double(outW) / Double(w), Double(outH) / Double(h))
                rw = max(outW, Int((Double(w) * s).rounded()))
                rh = max(outH, Int((Double(h) * s).rounded()))
            }
        }
        func offset(_ resized: Int, _ out: Int) -> Int {
            if resized >= out { return (resized - out) / 2 }
            return -((out - resized) / 2)
        }
        self.init(resizedWidth: rw, resizedHeight: rh, offsetX: offset(rw, outW), offsetY: offset(rh, outH),
                  outputWidth: outW, outputHeight: outH)
    }
}
