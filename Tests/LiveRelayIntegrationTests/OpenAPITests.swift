import Foundation
import LiveRelayCore
import LiveRelayPostgres
import LiveRelayServer
import Testing

/// The OpenAPI document in the repository describes every route the relay serves, and is what it serves.
@Suite("OpenAPI document")
struct OpenAPITests {
    @Test("every route of the relay is in openapi.json, with its method")
    func everyRouteIsDocumented() async throws {
        let data = try Data(contentsOf: Harness.projectRoot.appendingPathComponent("openapi.json"))
        let document = try JSONValue(parsing: String(decoding: data, as: UTF8.self))
        guard case .object(let paths)? = document.objectValue?["paths"] else { Issue.record("no paths"); return }
        var documented = Set<String>()
        for (path, item) in paths {
            for method in item.objectValue?.keys ?? [:].keys { documented.insert("\(method.uppercased()) \(path)") }
        }
        let configuration = try RelayConfiguration.fromEnvironment([
            "DATABASE_URL": "postgres://x@127.0.0.1:1/x", "APNS_TEAM_ID": "T", "APNS_KEY_ID": "K",
            "APNS_PRIVATE_KEY": P256Key.pem,
        ], files: LocalFiles())
        let server = try RelayServer(
            configuration: configuration, migrator: try Migrator(directory: Harness.projectRoot),
            logger: .init(label: "t"))
        let routes = try server.routeSignatures()
        #expect(routes.count >= 20)
        let missing = routes.filter { !documented.contains($0) }
        #expect(missing.isEmpty, "routes missing from openapi.json: \(missing)")
        let stale = documented.subtracting(routes)
        #expect(stale.isEmpty, "documented routes that do not exist: \(stale)")
        // The document describes this release.
        #expect(document.objectValue?["info"]?.objectValue?["version"] == .string(LiveRelayVersion.current))
    }

    @Test("a webhook's url: the document's pattern is the one the relay checks, and it refuses what falls outside")
    func webhookURLPattern() throws {
        let data = try Data(contentsOf: Harness.projectRoot.appendingPathComponent("openapi.json"))
        let document = try JSONValue(parsing: String(decoding: data, as: UTF8.self))
        let url = document.objectValue?["paths"]?.objectValue?["/v1/webhooks"]?.objectValue?["post"]?
            .objectValue?["requestBody"]?.objectValue?["content"]?.objectValue?["application/json"]?
            .objectValue?["schema"]?.objectValue?["properties"]?.objectValue?["url"]?.objectValue
        #expect(url?["pattern"] == .string(WebhookURLShape.pattern))
        for allowed in ["http://example.com", "https://a-b.example:8443/hooks/x?y=1&z=%20", "http://10.0.0.1:9/h"] {
            #expect(WebhookURLShape.refusal(of: allowed) == nil, "\(allowed)")
        }
        for refused in ["http://0*", "http://example.com/é", "http://example.com/#top", "HTTP://example.com",
                        "http://user:pw@example.com/", "ftp://example.com/", "http://[::1]:9/h", "http://[d96B01]/"] {
            #expect(WebhookURLShape.refusal(of: refused) != nil, "\(refused)")
        }
    }

    @Test("the relay serves the same document")
    func served() async throws {
        try await Harness.with { h in
            try await h.withRelayPort { port in
                let reply = try await RelayHTTP(port: port).request(.GET, "/openapi.json")
                let file = try String(
                    contentsOf: Harness.projectRoot.appendingPathComponent("openapi.json"), encoding: .utf8)
                #expect(reply.status == 200 && reply.text == file)
                let page = try await RelayHTTP(port: port).request(.GET, "/")
                #expect(page.status == 200 && page.text.contains("<h1>LiveRelay</h1>"))
            }
        }
    }
}

import Crypto
enum P256Key {
    static let pem = P256.Signing.PrivateKey().pemRepresentation
}
