import XCTest

/// max |a − b| / max(1, max |b|); a NaN on one side only is an infinite difference.
public func relativeDifference(_ a: [Float], _ b: [Float]) -> Float {
    var diff: Float = 0, scale: Float = 1
    for i in 0..<min(a.count, b.count) {
        if a[i].isNaN != b[i].isNaN { diff = .infinity }
        diff = max(diff, abs(a[i] - b[i]))
        scale = max(scale, abs(b[i]))
    }
    return diff / scale
}

/// max |a − b| / max |b|: the relative error used for parity checks against a reference.
public func relativeError(_ a: [Float], _ b: [Float]) -> Float {
    precondition(a.count == b.count, "size mismatch \(a.count) vs \(b.count)")
    var diff: Float = 0, scale: Float = 0
    for i in a.indices {
        diff = max(diff, abs(a[i] - b[i]))
        scale = max(scale, abs(b[i]))
    }
    return scale > 0 ? diff / scale : diff
}

/// Asserts max |a − b| ≤ tolerance · max(1, max |b|): vector sums reassociate, so results are
/// compared within a relative tolerance, never with `==`.
public func assertClose(_ a: [Float], _ b: [Float], tolerance: Float = 1e-5, _ message: String = "",
                        file: StaticString = #filePath, line: UInt = #line) {
    XCTAssertEqual(a.count, b.count, file: file, line: line)
    let d = relativeDifference(a, b)
    XCTAssertLessThanOrEqual(d, tolerance, "relative error \(d) \(message)", file: file, line: line)
}
