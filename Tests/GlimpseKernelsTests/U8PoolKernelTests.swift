import GlimpseKernels
import GlimpseTestSupport
import XCTest

/// The uint8 kernels of quantized Concat and MaxPool: `u8_maxpool2d_rows` against its scalar
/// reference, and the requantization table lookup against the float round trip it replaces.
final class U8PoolKernelTests: XCTestCase {
    /// Every path of the horizontal pass (stride 1 and 2 vectors, lane by lane at stride 3), rows
    /// narrower than 16, between 16 and 64 and wider than 64, dilation, asymmetric and ceil-mode
    /// padding, and planes back to back so a whole-vector store at a plane's end cannot run into the next.
    func testMaxPoolMatchesReference() {
        var rng = TestRandom(seed: 43)
        var strides = [0, 0, 0]
        for i in 0..<120 {
            let kh = rng.int(1...4), kw = rng.int(1...4)
            let sh = rng.int(1...3), sw = i % 3 + 1
            let dh = rng.int(1...2), dw = rng.int(1...2)
            let padTop = rng.int(0...(kh - 1)), padLeft = rng.int(0...(kw - 1))
            let padBottom = rng.int(0...(kh - 1)), padRight = rng.int(0...(kw - 1))
            let h = rng.int(((kh - 1) * dh + 1)...40)
            let w = [rng.int(((kw - 1) * dw + 1)...15), rng.int(16...63), rng.int(64...150)][(i / 3) % 3]
            let ceil = i % 4 == 0
            var outH = (h + padTop + padBottom - (kh - 1) * dh - 1 + (ceil ? sh - 1 : 0)) / sh + 1
            var outW = (w + padLeft + padRight - (kw - 1) * dw - 1 + (ceil ? sw - 1 : 0)) / sw + 1
            // As in ONNX's ceil mode, the last window starts inside the input or its leading padding.
            if (outH - 1) * sh - padTop >= h { outH -= 1 }
            if (outW - 1) * sw - padLeft >= w { outW -= 1 }
            let g = ConvGeometry(inChannels: 1, inHeight: h, inWidth: w, kernelHeight: kh, kernelWidth: kw,
                                 strideH: sh, strideW: sw, dilationH: dh, dilationW: dw, padTop: padTop, padLeft: padLeft,
                                 outHeight: outH, outWidth: outW)
            strides[sw - 1] += 1
            // Values from 1: a window that took the padding's 0 would show.
            let x = (0..<(3 * g.inPixels)).map { _ in UInt8(rng.int(1...255)) }
            var out = [UInt8](repeating: 0, count: 3 * g.outPixels), ref = out
            var scratch = [UInt8](repeating: 0xAA, count: u8_maxpool2d_rows.scratchBytes(g))
            x.withUnsafeBufferPointer { x in
                scratch.withUnsafeMutableBufferPointer { s in
                    let pool = u8_maxpool2d_rows(geometry: g, scratch: s.baseAddress!)
                    out.withUnsafeMutableBufferPointer { o in
                        for p in 0..<3 { pool.run(input: x.baseAddress! + p * g.inPixels, output: o.baseAddress! + p * g.outPixels) }
                    }
                }
                ref.withUnsafeMutableBufferPointer { r in
                    for p in (0..<3).reversed() {
                        u8_maxpool2d_reference(input: x.baseAddress! + p * g.inPixels, output: r.baseAddress! + p * g.outPixels, geometry: g)
                    }
                }
            }
            XCTAssertEqual(out, ref, "\(g)")
            XCTAssertFalse(ref.contains(0), "padding won a maximum in the reference: \(g)")
        }
        XCTAssertEqual(strides, [40, 40, 40])
    }

    /// The table is the dequantize kernel then the quantize kernel, and the vector lookup (every
    /// index, lengths off the 64-byte blocks) gives the table's entries.
    func testRequantizeTableLookup() {
        var rng = TestRandom(seed: 47)
        let params: [(Float, Int32, Float, Int32)] = [(0.05, 0, 0.08, 0), (0.021, 120, 0.037, 7), (0.3, 255, 0.01, 128),
                                                      (0.0117, 3, 0.0117, 9)]
        for (sa, za, sy, zy) in params {
            let table = QU8RequantizeTable.make(fromScale: sa, fromZeroPoint: za, toScale: sy, toZeroPoint: zy)
            for q in 0..<256 {
                let f = Float(Int32(q) - za) * sa
                XCTAssertEqual(table[q], qu8QuantizeReference(f, scale: sy, zeroPoint: zy), "q \(q)")
            }
            for n in [0, 1, 63, 64, 65, 256, 1000] {
                let x = (0..<n).map { i in i < 256 ? UInt8(i) : UInt8(rng.int(0...255)) }
                var y = [UInt8](repeating: 0, count: n), ref = y
                table.withUnsafeBufferPointer { t in
                    x.withUnsafeBufferPointer { x in
                        y.withUnsafeMutableBufferPointer { qu8_lookup(x.baseAddress!, $0.baseAddress!, count: n, table: t.baseAddress!) }
                        ref.withUnsafeMutableBufferPointer {
                            qu8_lookup_reference(x.baseAddress!, $0.baseAddress!, count: n, table: t.baseAddress!)
                        }
                    }
                }
                XCTAssertEqual(y, ref, "n \(n)")
            }
        }
    }
}
