import Foundation
import HTTPTypes
import HummingbirdTesting
@testable import LiveRelayHTTP
import NIOCore
import Testing

/// The dashboard's files: each at its path with its type and a policy that lets the page load nothing else.
@Suite("Dashboard files", .timeLimit(.minutes(1)))
struct DashboardFileTests {
    @Test("every file of the dashboard is served at its path, with its type, no-cache and the page's policy")
    func served() async throws {
        var files: [DashboardAsset: Data] = [:]
        for asset in DashboardAsset.allCases { files[asset] = Data("contents of \(asset.rawValue)".utf8) }
        try await RouteContractTests.withRouter(dashboard: DashboardFiles(files: files)) { client in
            for asset in DashboardAsset.allCases {
                let path = asset == .page ? "/" : "/\(asset.rawValue)"
                let response = try await client.execute(uri: path, method: .get)
                #expect(response.status == .ok, "\(path)")
                #expect(String(buffer: response.body) == "contents of \(asset.rawValue)")
                #expect(response.headers[.contentType] == asset.contentType)
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
