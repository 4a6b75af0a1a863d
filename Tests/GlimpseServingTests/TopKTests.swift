import XCTest

@testable import GlimpseServing

/// `TopK.select`: the k most probable classes, best first, the lower index first among equal
/// scores, the same whether it sorts everything or keeps only the best k in one pass.
final class TopKTests: XCTestCase {
    func reference(_ p: [Float], _ k: Int) -> [Int] {
        Array(p.indices.sorted { p[$0] > p[$1] || (p[$0] == p[$1] && $0 < $1) }.prefix(max(0, k)))
    }

    func testSelectionMatchesAFullSortWithTies() {
        var generator = SystemRandomNumberGenerator()
        for trial in 0..<200 {
            let n = Int.random(in: 1...1200, using: &generator)
            // Few distinct values, so ties are common; then normalized to a distribution.
            let raw = (0..<n).map { _ in Float(Int.random(in: 0...9, using: &generator)) + 1 }
            let sum = raw.reduce(0, +)
            let p = raw.map { $0 / sum }
            for k in [0, 1, 2, 5, n / 8, n / 8 + 1, n, n + 3] {
                let got = TopK.select(scores: p, k: k)
                XCTAssertEqual(got.map(\.index), reference(p, k), "trial \(trial), n \(n), k \(k)")
                XCTAssertEqual(got.map(\.score), reference(p, k).map { p[$0] })
            }
        }
    }

    func testLogitsGoThroughSoftmax() {
        let got = TopK.select(scores: [1, 3, 2, 3], k: 3)
        XCTAssertEqual(got.map(\.index), [1, 3, 2])
        XCTAssertEqual(Double(got.map(\.score).reduce(0, +)), 0.936, accuracy: 0.01)
    }
}
