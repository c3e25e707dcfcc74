import Foundation
import LiveRelayCore

/// The configuration's files on this machine's file system.
public struct LocalFiles: ConfigurationFiles {
    public init() {}

    public func contents(of path: String) -> String? {
        try? String(contentsOfFile: path, encoding: .utf8)
    }

    public func isReadable(_ path: String) -> Bool {
        FileManager.default.isReadableFile(atPath: path)
    }
}
