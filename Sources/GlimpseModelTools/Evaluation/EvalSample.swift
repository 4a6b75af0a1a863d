import Foundation

/// One labelled image of an evaluation data set.
public struct EvalSample: Sendable {
    public enum Image: Sendable {
        /// JPEG or PNG bytes, decoded by the same pipeline as `classify`.
        case encoded([UInt8])
        /// Already decoded 8-bit pixels (IDX files), rows packed.
        case pixels([UInt8], width: Int, height: Int, channels: Int)
    }

    public var label: String
    public var image: Image
    /// Where it came from (file or archive member, or `images[i]`), for error messages.
    public var source: String

    public init(label: String, image: Image, source: String) {
        self.label = label
        self.image = image
        self.source = source
    }
}

/// Why a data set cannot be read.
public struct DatasetError: Error, CustomStringConvertible, Sendable, Equatable {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Image file extensions the evaluation readers pick up.
enum ImageFiles {
    static let extensions: Set<String> = ["jpg", "jpeg", "png"]

    static func isImage(_ name: String) -> Bool {
        extensions.contains((name as NSString).pathExtension.lowercased())
    }

    /// The label of a loose file named `<label>_rest.ext` or `<label>-rest.ext`.
    static func labelFromFileName(_ name: String) -> String? {
        let stem = ((name as NSString).lastPathComponent as NSString).deletingPathExtension
        guard let cut = stem.firstIndex(where: { $0 == "_" || $0 == "-" }), cut != stem.startIndex else { return nil }
        return String(stem[..<cut])
    }
}
