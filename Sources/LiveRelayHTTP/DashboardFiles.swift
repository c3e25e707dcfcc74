import Foundation

/// The dashboard's page, script and style sheet, read once at start-up from `dashboard/` in the project folder
/// (beside `migrations/`, as the Docker image lays it out). Everything the page needs is in these three files: it
/// loads nothing from elsewhere, so it works offline.
public struct DashboardFiles: Sendable {
    public var page: Data?
    public var script: Data?
    public var style: Data?

    public init(page: Data?, script: Data?, style: Data?) {
        self.page = page
        self.script = script
        self.style = style
    }

    /// The files in `folder`; each is nil when missing.
    public init(folder: URL?) {
        func read(_ name: String) -> Data? {
            folder.flatMap { try? Data(contentsOf: $0.appendingPathComponent(name)) }
        }
        self.init(page: read("index.html"), script: read("dashboard.js"), style: read("dashboard.css"))
    }
}
