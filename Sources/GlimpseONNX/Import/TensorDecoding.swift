import GlimpseEngine
import GlimpseTensor

/// Converts TensorProto payloads into engine tensors: floating point (float, float16, double) becomes
/// float32; int64/int32/int16 become int64, except int32 is kept for quantized biases; int8/uint8/bool stay.
enum TensorDecoding {
    static func decode(_ t: ONNXTensorProto, model: String) throws -> Tensor {
        let payload = try Payload(t, model: model)
        switch t.dataType {
        case 1, 10, 11: return try payload.floats()         // FLOAT, FLOAT16, DOUBLE → float32
        case 2, 3, 9: return try payload.bytes()            // UINT8, INT8, BOOL
        case 6: return try payload.int32s()                 // INT32 (quantized biases)
        case 5, 7, 12, 13: return try payload.int64s()      // INT16, INT64, UINT32, UINT64 → int64
        default: throw payload.fail("unsupported data type \(t.dataType)")
        }
    }

    /// One TensorProto with its checked element count.
    struct Payload {
        let t: ONNXTensorProto
        let model: String
        let dims: [Int]
        private(set) var count: Int
        var shape: Shape { Shape(dims) }

        init(_ t: ONNXTensorProto, model: String) throws {
            self.t = t
            self.model = model
            self.dims = t.dims.map { Int(truncatingIfNeeded: $0) }
            self.count = 0
            guard !t.isExternal else { throw fail("external data files are not supported; embed the weights in the .onnx file") }
            guard t.dims.allSatisfy({ $0 >= 0 && $0 < (1 << 32) }) else { throw fail("invalid dims \(t.dims)") }
            var count = 1
            for d in dims {
                let (r, o) = count.multipliedReportingOverflow(by: d)
                guard !o, r < (1 << 34) else { throw fail("too many elements (dims \(dims))") }
                count = r
            }
            // Every element takes at least one byte of raw_data or one typed value: a tensor that holds
            // fewer is refused before its storage is allocated (the dims alone come from the file).
            let available = t.rawData?.count
                ?? max(t.floatData.count, t.int32Data.count, t.int64Data.count, t.doubleData.count, t.uint64Data.count)
            guard count <= available else { throw fail("dims \(dims) need \(count) values; the tensor holds \(available)") }
            self.count = count
        }

        func fail(_ why: String) -> EngineError {
            EngineError("\(model): tensor '\(t.name)': \(why)")
        }

        /// `raw_data` when present, checked to hold `size` bytes per element.
        func raw(_ size: Int) throws -> ArraySlice<UInt8>? {
            guard let r = t.rawData else { return nil }
            guard r.count == count * size else { throw fail("raw_data has \(r.count) bytes, dims \(dims) need \(count * size)") }
            return r
        }

        /// Fills `p` from `raw_data` (element `i` read by `raw`) or else from `int32_data`.
        func fill<T>(_ p: UnsafeMutablePointer<T>, size: Int, raw read: (UnsafeRawBufferPointer, Int) -> T,
                     int32 convert: (Int64) -> T) throws {
            if let r = try raw(size) {
                r.withUnsafeBytes { b in for i in 0..<count { p[i] = read(b, i) } }
            } else {
                try checkCount(t.int32Data.count, "int32_data")
                for i in 0..<count { p[i] = convert(t.int32Data[i]) }
            }
        }

        func checkCount(_ n: Int, _ field: String) throws {
            guard n == count else { throw fail("\(field) has \(n) values, dims \(dims) need \(count)") }
        }

        func floats() throws -> Tensor {
            let out = Tensor(shape: shape, dtype: .float32)
            let p = out.f32
            let type = t.dataType
            if let r = try raw(type == 1 ? 4 : (type == 10 ? 2 : 8)) {
                r.withUnsafeBytes { b in
                    for i in 0..<count {
                        switch type {
                        case 1: p[i] = Float(bitPattern: b.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self).littleEndian)
                        case 10: p[i] = Float(Float16(bitPattern: b.loadUnaligned(fromByteOffset: i * 2, as: UInt16.self).littleEndian))
                        default: p[i] = Float(Double(bitPattern: b.loadUnaligned(fromByteOffset: i * 8, as: UInt64.self).littleEndian))
                        }
                    }
                }
            } else if type == 1 {
                try checkCount(t.floatData.count, "float_data")
                for i in 0..<count { p[i] = t.floatData[i] }
            } else if type == 10 {
                try checkCount(t.int32Data.count, "int32_data (float16 bits)")
                for i in 0..<count { p[i] = Float(Float16(bitPattern: UInt16(truncatingIfNeeded: t.int32Data[i]))) }
            } else {
                try checkCount(t.doubleData.count, "double_data")
                for i in 0..<count { p[i] = Float(t.doubleData[i]) }
            }
            return out
        }

        func bytes() throws -> Tensor {
            let out = Tensor(shape: shape, dtype: t.dataType == 3 ? .int8 : (t.dataType == 9 ? .bool : .uint8))
            let p = out.rawPointer.assumingMemoryBound(to: UInt8.self)
            try fill(p, size: 1, raw: { b, i in b[i] }, int32: { UInt8(truncatingIfNeeded: $0) })
            return out
        }

        func int32s() throws -> Tensor {
            let out = Tensor(shape: shape, dtype: .int32)
            let p = out.pointer(as: Int32.self)
            try fill(p, size: 4, raw: { b, i in Int32(littleEndian: b.loadUnaligned(fromByteOffset: i * 4, as: Int32.self)) }, int32: { Int32(truncatingIfNeeded: $0) })
            return out
        }

        func int64s() throws -> Tensor {
            let out = Tensor(shape: shape, dtype: .int64)
            let p = out.pointer(as: Int64.self)
            let type = t.dataType
            if let r = try raw(type == 5 ? 2 : (type == 12 ? 4 : 8)) {
                r.withUnsafeBytes { b in
                    for i in 0..<count {
                        switch type {
                        case 5: p[i] = Int64(Int16(littleEndian: b.loadUnaligned(fromByteOffset: i * 2, as: Int16.self)))
                        case 12: p[i] = Int64(UInt32(littleEndian: b.loadUnaligned(fromByteOffset: i * 4, as: UInt32.self)))
                        default: p[i] = Int64(littleEndian: b.loadUnaligned(fromByteOffset: i * 8, as: Int64.self))
                        }
                    }
                }
            } else {
                let src = type == 7 ? t.int64Data : (type == 13 ? t.uint64Data : t.int32Data)
                try checkCount(src.count, "typed data")
                for i in 0..<count { p[i] = src[i] }
            }
            return out
        }
    }
}
