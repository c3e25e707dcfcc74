import Foundation

/// The files the built-in dashboard is made of, each served at its own path.
public enum DashboardAsset: String, CaseIterable, Sendable {
    case page = "index.html"
    case script = "dashboard.js"
    case sections = "dashboard-sections.js"
    case style = "dashboard.css"

    /// The path it is served at: the page at `/`, the others under their file names.
    var path: String { self == .page ? "/" : rawValue }

    var contentType: String {
        switch self {
        case .page: "text/html; charset=utf-8"
        case .script, .sections: "text/javascript; charset=utf-8"
        case .style: "text/css; charset=utf-8"
        }
    }
}

/// The dashboard's files, read once at start-up from `dashboard/` in the project folder (beside `migrations/`, as the
/// Docker image lays it out). Everything the page needs is in these files: it loads nothing from elsewhere, so it
/// works offline.
public struct DashboardFiles: Sendable {
    /// The files read; a missing one is answered 404 naming it.
    public var files: [DashboardAsset: Data]

    public init(files: [DashboardAsset: Data]) {
        self.files = files
    }

    /// The files in `folder`, those that are there.
    public init(folder: URL?) {
        var files: [DashboardAsset: Data] = [:]
        for asset in DashboardAsset.allCases {
            files[asset] = folder.flatMap { try? Data(contentsOf: $0.appendingPathComponent(asset.rawValue)) }
        }
        self.init(files: files)
    }
}
