import Foundation
import LiveRelayCore
import LiveRelayHTTP2Client
import NIOCore
import NIOHPACK

/// Sends pushes to APNs' provider API over HTTP/2 (one long-lived connection per APNs host, see `HTTP2Client`).
public final class APNsClient: Sendable {
    let http: HTTP2Client
    private let origins: [APNsEnvironment: HTTP2Origin]
    /// Apple's Channel Management API, and where broadcasts go, per environment.
    let channelOrigins: [APNsEnvironment: HTTP2Origin]
    let broadcastOrigins: [APNsEnvironment: HTTP2Origin]
    public let tokens: ProviderTokenSource

    /// - Parameter eventLoop: the loop the connections live on; by default one of the shared loops.
    public init(configuration: APNsConfiguration, tokens: ProviderTokenSource,
                eventLoop: (any EventLoop)? = nil) throws {
        self.origins = try Dictionary(uniqueKeysWithValues: APNsEnvironment.allCases.map {
            ($0, try HTTP2Origin(url: configuration.baseURL(for: $0)))
        })
        self.channelOrigins = try Dictionary(uniqueKeysWithValues: APNsEnvironment.allCases.map {
            ($0, try HTTP2Origin(url: configuration.channelsURL(for: $0)))
        })
        self.broadcastOrigins = try Dictionary(uniqueKeysWithValues: APNsEnvironment.allCases.map {
            ($0, try HTTP2Origin(url: configuration.broadcastURL(for: $0)))
        })
        self.http = try HTTP2Client(
            caFile: configuration.caFile,
            limits: .init(
                silenceSeconds: configuration.requestTimeoutSeconds, batchSeconds: configuration.batchLimitSeconds),
            eventLoop: eventLoop)
        self.tokens = tokens
    }

    /// Sends pushes with one provider token and returns APNs' answers in the same order.
    public func send(_ pushes: [PushRequest], providerToken: String) async -> [Result<APNsResponse, HTTP2ClientError>] {
        let authorization = "bearer \(providerToken)"
        let requests = pushes.map { push in
            let origin = origins[push.environment]!
            return HTTP2Request(
                origin: origin, headers: Self.headers(for: push, origin: origin, authorization: authorization),
                body: ByteBuffer(bytes: push.payload))
        }
        return await http.send(requests).map { $0.map(Self.response) }
    }

    /// Closes the connections.
    public func shutdown() async throws {
        try await http.shutdown()
    }

    static func headers(for push: PushRequest, origin: HTTP2Origin, authorization: String) -> HPACKHeaders {
        var headers = origin.headers(method: "POST", path: "/3/device/\(push.deviceToken)", capacity: 11)
        headers.add(name: "authorization", value: authorization)
        headers.add(name: "apns-push-type", value: push.pushType.rawValue)
        headers.add(name: "apns-topic", value: push.topic)
        headers.add(name: "apns-priority", value: String(push.priority))
        // Values that differ on every request stay out of HPACK's dynamic table (see HTTP2Origin.headers).
        headers.add(name: "apns-id", value: push.apnsID.uuidString.lowercased(), indexing: .nonIndexable)
        if let expiration = push.expiration {
            headers.add(name: "apns-expiration", value: String(expiration), indexing: .nonIndexable)
        }
        headers.add(name: "content-type", value: "application/json")
        return headers
    }

    /// APNs' answer: the status, the `reason` of an error's JSON body, `apns-id` and `retry-after`.
    static func response(_ answer: HTTP2Response) -> APNsResponse {
        var reason: String?
        if answer.status != 200, let body = answer.body,
           case .object(let object)? = try? JSONValue(parsing: String(buffer: body)),
           case .string(let text)? = object["reason"] {
            reason = text
        }
        return APNsResponse(status: answer.status, reason: reason, apnsID: answer.headers.first(name: "apns-id"),
                            retryAfterSeconds: answer.retryAfterSeconds)
    }
}
