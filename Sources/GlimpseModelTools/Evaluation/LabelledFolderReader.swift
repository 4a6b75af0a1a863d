import Foundation

/// A folder of labelled images: either one subfolder per label (`DATA/<label>/…/*.jpg`), or loose
/// files named `<label>_*.png` / `<label>-*.jpg`. Files are read in sorted order.
public enum LabelledFolderReader {
    public static func read(_ directory: String, limit: Int? = nil) throws -> [EvalSample] {
        let fm = FileManager.default
        guard let entries = try? fm.contentsOfDirectory(atPath: directory) else { throw DatasetError("cannot read the folder \(directory)") }
        var out: [EvalSample] = []
        func add(_ path: String, label: String) throws {
            guard let data = fm.contents(atPath: path) else { throw DatasetError("cannot read \(path)") }
            out.append(EvalSample(label: label, image: .encoded([UInt8](data)), source: path))
        }
        for entry in entries.sorted() where !entry.hasPrefix(".") {
            if let limit, out.count >= limit { break }
            let path = (directory as NSString).appendingPathComponent(entry)
            var isDir: ObjCBool = false
            guard fm.fileExists(atPath: path, isDirectory: &isDir) else { continue }
            if isDir.boolValue {
                let files = (fm.enumerator(atPath: path)?.allObjects as? [String] ?? []).filter(ImageFiles.isImage).sorted()
                for file in files {
                    if let limit, out.count >= limit { break }
                    try add((path as NSString).appendingPathComponent(file), label: entry)
                }
            } else if ImageFiles.isImage(entry), let label = ImageFiles.labelFromFileName(entry) {
                try add(path, label: label)
            }
        }
        return out
    }
}
