import Foundation

/// The last plain body whose outcome depends on nothing but its shape (no errors, no numeric fields read),
/// e.g. `health` answers that differ only in `uptime_s`. A body equal to it except for the values of
/// numbers outside strings (each still a plain JSON number) has the same outcome, which a word-by-word
/// comparison finds in a fraction of a full scan.
struct ResponseShape {
    private var bytes: [UInt8] = []
    /// Per byte of `bytes`: 2 in a number outside strings, 1 in a string (quotes included), 0 otherwise.
    private var classes: [UInt8] = []
    private(set) var outcome = ResponseOutcome(status: 0)
    private(set) var isSet = false

    static let maxBytes = 2048

    /// Remembers `body` (read by the byte scanner into `outcome`) if its outcome depends on its shape only.
    mutating func remember(_ body: [UInt8], outcome: ResponseOutcome) {
        isSet = false
        guard body.count <= Self.maxBytes, outcome.errors.isEmpty,
              outcome.results.allSatisfy({ $0.queueMs == nil && $0.inferenceMs == nil && $0.batchSize == nil }) else { return }
        bytes = body
        classes.removeAll(keepingCapacity: true)
        var inString = false
        for c in body {
            if c == UInt8(ascii: "\\") { return }  // never in a body the scanner read; be safe
            if c == UInt8(ascii: "\"") {
                inString.toggle()
                classes.append(1)
            } else if inString {
                classes.append(1)
            } else {
                classes.append(Self.isNumberByte(c) ? 2 : 0)
            }
        }
        guard !inString else { return }
        self.outcome = outcome
        isSet = true
    }

    /// Whether `body` has the remembered shape.
    func matches(_ body: [UInt8]) -> Bool {
        guard isSet else { return false }
        return body.withUnsafeBufferPointer { new in
            bytes.withUnsafeBufferPointer { old in
                classes.withUnsafeBufferPointer { cls in Self.matches(new, old, cls) }
            }
        }
    }

    private static func matches(_ new: UnsafeBufferPointer<UInt8>, _ old: UnsafeBufferPointer<UInt8>, _ cls: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let a = new.baseAddress, let b = old.baseAddress else { return false }
        let n = new.count, m = old.count
        var i = 0, j = 0
        while true {
            // Equal stretches a word at a time, then byte by byte.
            while i + 8 <= n && j + 8 <= m {
                let x = UnsafeRawPointer(a + i).loadUnaligned(as: UInt64.self)
                let y = UnsafeRawPointer(b + j).loadUnaligned(as: UInt64.self)
                if x != y {
                    let d = (x ^ y).trailingZeroBitCount >> 3
                    i += d
                    j += d
                    break
                }
                i += 8
                j += 8
            }
            while i < n && j < m && a[i] == b[j] {
                i += 1
                j += 1
            }
            if i == n && j == m { return true }
            if i == n || j == m { return false }  // a body ends with a bracket or space, never in a number
            // A difference: only inside, or just after, a number outside strings.
            guard cls[j] == 2 || (j > 0 && cls[j - 1] == 2) else { return false }
            var back = 0
            while j - back > 0 && cls[j - back - 1] == 2 { back += 1 }
            let oldStart = j - back, newStart = i - back
            var oldEnd = oldStart
            while oldEnd < m && cls[oldEnd] == 2 { oldEnd += 1 }
            var newEnd = newStart
            while newEnd < n && (isNumberByte(a[newEnd]) || a[newEnd] == UInt8(ascii: "e") || a[newEnd] == UInt8(ascii: "E")
                                 || a[newEnd] == UInt8(ascii: "+")) { newEnd += 1 }
            guard oldEnd > oldStart, isPlainNumber(a + newStart, newEnd - newStart) else { return false }
            i = newEnd
            j = oldEnd
        }
    }

    @inline(__always) private static func isNumberByte(_ c: UInt8) -> Bool {
        c &- 48 < 10 || c == UInt8(ascii: "-") || c == UInt8(ascii: ".")
    }

    /// A strict JSON number without exponent, at most 17 characters (what the byte scanner accepts).
    private static func isPlainNumber(_ p: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        guard count > 0, count <= 17 else { return false }
        var k = 0
        if p[0] == UInt8(ascii: "-") { k = 1 }
        guard k < count, p[k] &- 48 < 10 else { return false }
        if p[k] == UInt8(ascii: "0") {
            k += 1
        } else {
            while k < count && p[k] &- 48 < 10 { k += 1 }
        }
        if k < count && p[k] == UInt8(ascii: ".") {
            k += 1
            guard k < count, p[k] &- 48 < 10 else { return false }
            while k < count && p[k] &- 48 < 10 { k += 1 }
        }
        return k == count
    }
}
