/// The files a configuration names (`*_FILE` variables, CA bundles), read by whoever calls
/// `RelayConfiguration.fromEnvironment`: the commands give the local file system, tests can give a dictionary.
/// Core itself reads no file.
public protocol ConfigurationFiles: Sendable {
    /// The file's text, or nil when it cannot be read.
    func contents(of path: String) -> String?
    /// Whether the file exists and can be read (a CA bundle the HTTP/2 client reads later).
    func isReadable(_ path: String) -> Bool
}
