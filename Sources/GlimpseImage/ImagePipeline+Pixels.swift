extension ImagePipeline {
    /// As `preprocess(_:spec:crop:limits:into:)`, for pixels that are already decoded (data sets such as
    /// MNIST's IDX files): 8-bit, rows packed, 1 (gray), 3 (RGB) or 4 (RGBA) channels. The crop, resize
    /// and normalization are the same code an encoded image goes through.
    public static func preprocess(pixels: UnsafeRawBufferPointer, width: Int, height: Int, channels: Int,
                                  spec: Preprocessing, crop: CropMode? = nil,
                                  into destination: UnsafeMutableRawPointer) throws {
        guard [1, 3, 4].contains(channels) else {
            throw ImageError(.unsupportedFormat, "raw pixels must have 1, 3 or 4 channels, not \(channels)")
        }
        guard width > 0, height > 0, pixels.count == width * height * channels else {
            throw ImageError(.corrupt, "raw pixels: \(pixels.count) bytes do not make a \(width)x\(height)x\(channels) image")
        }
        let buffer = try PixelBuffer(width: width, height: height)
        for i in 0..<(width * height) {
            let o = buffer.base + i * PixelBuffer.bytesPerPixel
            let s = i * channels
            switch channels {
            case 1:
                o[0] = pixels[s]; o[1] = pixels[s]; o[2] = pixels[s]; o[3] = 255
            case 3:
                o[0] = pixels[s]; o[1] = pixels[s + 1]; o[2] = pixels[s + 2]; o[3] = 255
            default:
                o[0] = pixels[s]; o[1] = pixels[s + 1]; o[2] = pixels[s + 2]; o[3] = pixels[s + 3]
            }
        }
        if channels == 4 { buffer.compositeAlphaOnWhite() }
        let geometry = CropGeometry(sourceWidth: width, sourceHeight: height, spec: spec, mode: crop ?? spec.crop)
        try render(buffer, geometry: geometry, normalizer: try Normalizer(spec: spec, destination: destination))
    }
}
