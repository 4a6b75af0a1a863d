import Foundation

/// Opens an evaluation data set by looking at what `path` is: a folder of labelled images, an IDX
/// image file (its label file beside it, or `labels`), or a tar archive; gzip is allowed for files.
public enum EvalDataset {
    public enum Kind: String, Sendable {
        case folder, idx, tar
    }

    public static func load(_ path: String, labels: String? = nil, limit: Int? = nil) throws -> (kind: Kind, samples: [EvalSample]) {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDir) else { throw DatasetError("no such file or folder: \(path)") }
        if isDir.boolValue { return (.folder, try LabelledFolderReader.read(path, limit: limit)) }
        let raw = try IDXReader.readFile(path)
        let head = Gzip.isCompressed(raw) ? try Gzip.decompress(raw) : raw
        if IDXReader.isIDX(head) {
            guard let labelsPath = labels ?? IDXReader.labelsPath(forImages: path) else {
                throw DatasetError("\(path) is an IDX image file; name its label file with --labels (none found beside it)")
            }
            return (.idx, try IDXReader.read(images: path, labels: labelsPath, limit: limit))
        }
        if TarReader.isTar(head) {
            return (.tar, TarReader.samples(try TarReader.members(head, name: path), limit: limit))
        }
        throw DatasetError("\(path) is neither a folder, an IDX file nor a tar archive")
    }
}
