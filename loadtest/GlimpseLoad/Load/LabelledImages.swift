import Foundation

/// Images with their true class, for counting correct answers ("effective accuracy").
///
/// Two forms: a folder of class-named subfolders (`cat/0001.jpg` is a cat), or a text file with one
/// `IMAGE LABEL` per line (separated by a tab, a comma or spaces; `#` starts a comment) naming images
/// of the `--images` folder by file name.
public struct LabelledImages: Sendable, Equatable {
    public struct Item: Sendable, Equatable {
        public var path: String
        public var label: String
        public init(path: String, label: String) {
            self.path = path
            self.label = label
        }
    }

    public var items: [Item]

    public init(items: [Item]) { self.items = items }

    static let extensions: Set<String> = ["jpg", "jpeg", "png"]

    static func isImage(_ name: String) -> Bool { extensions.contains((name as NSString).pathExtension.lowercased()) }

    /// Reads `labels` (a folder of class subfolders, or a mapping file over the images of `imagesFolder`),
    /// sorted by path.
    public static func load(labels: String, imagesFolder: String?) throws -> LabelledImages {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: labels, isDirectory: &isDirectory) else {
            throw LoadConfigError("labels: no file or folder \(labels)")
        }
        if isDirectory.boolValue { return try folder(labels) }
        guard let imagesFolder else { throw LoadConfigError("a labels file names images of the --images folder: give --images") }
        guard let text = try? String(contentsOfFile: labels, encoding: .utf8) else { throw LoadConfigError("cannot read labels file \(labels)") }
        return try mapping(text, imagesFolder: imagesFolder)
    }

    /// A folder of class-named subfolders of images.
    public static func folder(_ root: String) throws -> LabelledImages {
        let fm = FileManager.default
        guard let classes = try? fm.contentsOfDirectory(atPath: root) else { throw LoadConfigError("cannot list labels folder \(root)") }
        var items: [Item] = []
        for label in classes.sorted() where !label.hasPrefix(".") {
            let dir = (root as NSString).appendingPathComponent(label)
            var isDirectory: ObjCBool = false
            guard fm.fileExists(atPath: dir, isDirectory: &isDirectory), isDirectory.boolValue,
                  let names = try? fm.contentsOfDirectory(atPath: dir) else { continue }
            for name in names.sorted() where isImage(name) {
                items.append(Item(path: (dir as NSString).appendingPathComponent(name), label: label))
            }
        }
        guard !items.isEmpty else { throw LoadConfigError("no .jpg/.jpeg/.png images in class subfolders of \(root)") }
        return LabelledImages(items: items)
    }

    /// `IMAGE LABEL` lines over the images of `imagesFolder` (file names relative to it).
    public static func mapping(_ text: String, imagesFolder: String) throws -> LabelledImages {
        var items: [Item] = []
        var seen = Set<String>()
        for (number, raw) in text.split(whereSeparator: \.isNewline).enumerated() {
            let line = raw.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)[0].trimmingCharacters(in: .whitespaces)
            if line.isEmpty { continue }
            let separator: Character = line.contains("\t") ? "\t" : (line.contains(",") ? "," : " ")
            let parts = line.split(separator: separator, maxSplits: 1).map { $0.trimmingCharacters(in: .whitespaces) }
            guard parts.count == 2, !parts[0].isEmpty, !parts[1].isEmpty else {
                throw LoadConfigError("labels line \(number + 1): expected IMAGE LABEL, got \"\(line)\"")
            }
            guard seen.insert(parts[0]).inserted else { throw LoadConfigError("labels line \(number + 1): \(parts[0]) is labelled twice") }
            let path = (imagesFolder as NSString).appendingPathComponent(parts[0])
            guard FileManager.default.fileExists(atPath: path) else { throw LoadConfigError("labels line \(number + 1): no image \(path)") }
            items.append(Item(path: path, label: parts[1]))
        }
        guard !items.isEmpty else { throw LoadConfigError("the labels file names no image") }
        return LabelledImages(items: items.sorted { $0.path < $1.path })
    }

    /// The same items in a fixed pseudo-random order (so every second of a run mixes the classes).
    public func shuffled(seed: UInt64) -> LabelledImages {
        var state = seed &+ 0x9e37_79b9_7f4a_7c15
        func next() -> UInt64 {
            state &+= 0x9e37_79b9_7f4a_7c15
            var z = state
            z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
            z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
            return z ^ (z >> 31)
        }
        var out = items
        if out.count > 1 {
            for i in stride(from: out.count - 1, to: 0, by: -1) {
                out.swapAt(i, Int(next() % UInt64(i + 1)))
            }
        }
        return LabelledImages(items: out)
    }
}
