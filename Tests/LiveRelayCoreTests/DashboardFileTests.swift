import Foundation
import HTTPTypes
import HummingbirdTesting
@testable import LiveRelayHTTP
import NIOCore
import Testing

/// The dashboard's files: each at its path with its type and a policy that lets the page load nothing else.
@Suite("Dashboard files", .timeLimit(.minutes(1)))
struct DashboardFileTests {
    /// What the page's browser asks for, and what it must get.
    static let expected: [(path: String, file: String, type: String)] = [
        ("/", "index.html", "text/html; charset=utf-8"),
        ("/dashboard.js", "dashboard.js", "text/javascript; charset=utf-8"),
        ("/dashboard-sections.js", "dashboard-sections.js", "text/javascript; charset=utf-8"),
        ("/dashboard.css", "dashboard.css", "text/css; charset=utf-8"),
    ]

    @Test("every file of the dashboard is served at its path, with its type, no-cache and the page's policy")
    func served() async throws {
        #expect(Set(Self.expected.map(\.file)) == Set(DashboardAsset.allCases.map(\.rawValue)))
        var files: [DashboardAsset: Data] = [:]
        for asset in DashboardAsset.allCases { files[asset] = Data("contents of \(asset.rawValue)".utf8) }
        try await RouteContractTests.withRouter(dashboard: DashboardFiles(files: files)) { client in
            for (path, file, type) in Self.expected {
                let response = try await client.execute(uri: path, method: .get)
                #expect(response.status == .ok, "\(path)")
                #expect(String(buffer: response.body) == "contents of \(file)")
                #expect(response.headers[.contentType] == type)
                #expect(response.headers[.cacheControl] == "no-cache")
                #expect(response.headers[.contentSecurityPolicy]?.contains("default-src 'none'") == true)
                #expect(response.headers[.contentSecurityPolicy]?.contains("script-src 'self'") == true)
            }
        }
    }

    @Test("a file missing from dashboard/ answers 404 naming it")
    func missing() async throws {
        try await RouteContractTests.withRouter { client in
            let response = try await client.execute(uri: "/dashboard.js", method: .get)
            #expect(response.status == .notFound)
            #expect(String(buffer: response.body).contains("dashboard/dashboard.js was not found"))
        }
    }
}
