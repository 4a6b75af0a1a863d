import GlimpseServing

extension GlimpseMethods {
    /// Writes `encode(r).serialized()` without building the object: the same members in the same
    /// (sorted) order, each value written as `JSONValue` writes it. `ClassifyCallTests` compares the
    /// two byte for byte.
    static func write(_ r: ClassifyResult, into out: inout [UInt8]) {
        out.append(contentsOf: #"{"batch_size":"#.utf8)
        JSONValue.writeInt(r.batchSize, into: &out)
        out.append(contentsOf: #","energy_mj":"#.utf8)
        writeRounded(r.energyMillijoules, into: &out)
        out.append(contentsOf: #","image":{"format":"#.utf8)
        JSONValue.writeString(r.image.format, into: &out)
        out.append(contentsOf: #","height":"#.utf8)
        JSONValue.writeInt(r.image.height, into: &out)
        out.append(contentsOf: #","width":"#.utf8)
        JSONValue.writeInt(r.image.width, into: &out)
        out.append(contentsOf: #"},"model":"#.utf8)
        JSONValue.writeString(r.model, into: &out)
        out.append(contentsOf: #","predictions":["#.utf8)
        for (i, p) in r.predictions.enumerated() {
            out.append(contentsOf: (i == 0 ? #"{"index":"# : #",{"index":"#).utf8)
            JSONValue.writeInt(p.index, into: &out)
            out.append(contentsOf: #","label":"#.utf8)
            JSONValue.writeString(p.label, into: &out)
            out.append(contentsOf: #","score":"#.utf8)
            writeScore(p.score, into: &out)
            out.append(UInt8(ascii: "}"))
        }
        out.append(contentsOf: #"],"reason":"#.utf8)
        JSONValue.writeString(r.reason, into: &out)
        out.append(contentsOf: #","timing_ms":{"decode":"#.utf8)
        writeRounded(r.timing.decode, into: &out)
        out.append(contentsOf: #","inference":"#.utf8)
        writeRounded(r.timing.inference, into: &out)
        out.append(contentsOf: #","queue":"#.utf8)
        writeRounded(r.timing.queue, into: &out)
        out.append(contentsOf: #","total":"#.utf8)
        writeRounded(r.timing.total, into: &out)
        out.append(contentsOf: #"},"variant":"#.utf8)
        JSONValue.writeString(r.variant, into: &out)
        out.append(contentsOf: #","version":"#.utf8)
        JSONValue.writeString(r.version, into: &out)
        out.append(UInt8(ascii: "}"))
    }

    /// `rounded(value)` as written: three decimals.
    static func writeRounded(_ value: Double, into out: inout [UInt8]) {
        JSONValue.writeDouble((value * 1000).rounded() / 1000, into: &out)
    }

    /// `score(f)` as written. A finite, non-integral score below 10^6 in magnitude is Swift's
    /// shortest form of the float itself: parsed into a double, those at most 9 significant digits
    /// are again that double's shortest form, which is what `score` writes, without the two
    /// conversions. Anything else goes through `score`.
    static func writeScore(_ f: Float, into out: inout [UInt8]) {
        if f.isFinite && f.rounded() != f && f.magnitude < 1e6 {
            var text = f.description
            text.withUTF8 { out.append(contentsOf: $0) }
        } else if case .double(let d) = score(f) {
            JSONValue.writeDouble(d, into: &out)
        }
    }
}
