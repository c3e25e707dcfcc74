/// The release, as `liverelay --version`, `GET /health`, the start-up line, MCP's `serverInfo` and `openapi.json`'s
/// `info.version` say it (a test holds the document to it): during a rolling upgrade, which relay runs what.
public enum LiveRelayVersion {
    public static let current = "1.0.0"
}
