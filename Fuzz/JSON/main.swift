import CLibFuzzer
import Foundation
import GlimpseJSON

/// A tree of everything the parser reports, so each builder call is exercised.
struct Tree: JSONTreeBuilder {
    indirect enum Value {
        case null, bool(Bool), number(String), string(String), array([Value]), object([(String, Value)])
    }
    func null() -> Value { .null }
    func bool(_ value: Bool) -> Value { .bool(value) }
    func number(_ text: String, isInteger: Bool) -> Value? { .number(text) }
    func string(_ value: String) -> Value { .string(value) }
    func array(_ items: [Value]) -> Value { .array(items) }
    func object(_ members: [(key: String, value: Value)]) -> Value { .object(members.map { ($0.key, $0.value) }) }
}

/// Any bytes: a tree or a `JSONParseError` whose offset lies inside the text (or at its end).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    do {
        _ = try JSONReader.parse(bytes, maxDepth: 64, builder: Tree())
    } catch let error as JSONParseError {
        precondition(error.offset >= 0 && error.offset <= size, "error offset \(error.offset) outside 0...\(size)")
    } catch {
        preconditionFailure("unexpected error type \(error)")
    }
    return 0
}

var argc = CommandLine.argc
var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
exit(LLVMFuzzerRunDriver(&argc, &argv) { data, size in fuzz(data!, size) })
