import AsyncHTTPClient
import Foundation
import LiveRelayCore
import Logging
import NIOCore
import NIOFoundationCompat
import NIOHTTP1
import NIOSSL

/// Sends pushes to APNs over long-lived HTTP/2 connections (TLS ALPN), one deadline per request.
public final class APNsClient: Sendable {
    private let http: HTTPClient
    private let configuration: APNsConfiguration
    public let tokens: ProviderTokenSource

    public init(configuration: APNsConfiguration, tokens: ProviderTokenSource) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.applicationProtocols = ["h2"]
        if let caFile = configuration.caFile {
            tls.additionalTrustRoots = [.file(caFile)]
        }
        var httpConfiguration = HTTPClient.Configuration(tlsConfiguration: tls)
        httpConfiguration.httpVersion = .automatic
        httpConfiguration.timeout = .init(connect: .seconds(5), read: .seconds(Int64(configuration.requestTimeoutSeconds)))
        httpConfiguration.connectionPool = .init(idleTimeout: .minutes(55))
        httpConfiguration.decompression = .disabled
        self.http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: httpConfiguration)
        self.configuration = configuration
        self.tokens = tokens
    }

    /// Sends one push with the current provider token; throws only when no answer came (connection or deadline).
    public func send(_ push: PushRequest, providerToken: String) async throws -> APNsResponse {
        var request = HTTPClientRequest(url: "\(configuration.baseURL(for: push.environment))/3/device/\(push.deviceToken)")
        request.method = .POST
        request.headers.add(name: "authorization", value: "bearer \(providerToken)")
        request.headers.add(name: "apns-push-type", value: push.pushType.rawValue)
        request.headers.add(name: "apns-topic", value: push.topic)
        request.headers.add(name: "apns-priority", value: String(push.priority))
        request.headers.add(name: "apns-id", value: push.apnsID.uuidString.lowercased())
        if let expiration = push.expiration {
            request.headers.add(name: "apns-expiration", value: String(expiration))
        }
        request.headers.add(name: "content-type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: push.payload))
        let response = try await http.execute(request, timeout: .milliseconds(Int64(configuration.requestTimeoutSeconds * 1000)))
        let body = try await response.body.collect(upTo: 64 * 1024)
        var reason: String?
        if response.status != .ok, case .object(let object)? = try? JSONDecoder().decode(JSONValue.self, from: Data(buffer: body)),
           case .string(let text)? = object["reason"] {
            reason = text
        }
        return APNsResponse(
            status: Int(response.status.code), reason: reason, apnsID: response.headers.first(name: "apns-id"),
            retryAfterSeconds: response.headers.first(name: "retry-after").flatMap(Double.init))
    }

    /// Closes the connections.
    public func shutdown() async throws {
        try await http.shutdown()
    }
}
