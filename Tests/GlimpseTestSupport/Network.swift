import Foundation
#if canImport(Glibc)
import Glibc
#endif

public struct FreePortError: Error, CustomStringConvertible {
    public let description: String
}

/// A loopback TCP port that is free right now (free unless taken again before the caller binds it).
public enum FreePort {
    public static func pick() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw FreePortError(description: "socket() failed") }
        defer { close(fd) }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard bound else { throw FreePortError(description: "bind() failed") }
        return Int(UInt16(bigEndian: addr.sin_port))
    }
}
