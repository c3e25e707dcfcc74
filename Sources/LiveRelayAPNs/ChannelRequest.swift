import Foundation
import LiveRelayCore
import LiveRelayHTTP2Client
import NIOCore
import NIOHPACK

/// One request about a broadcast channel: Apple's Channel Management API (create, delete) or a broadcast push.
public struct ChannelRequest: Sendable, Hashable {
    public enum Operation: Sendable, Hashable {
        /// `POST /1/apps/<bundle>/channels` with the storage policy.
        case create(storagePolicy: Int)
        /// `DELETE /1/apps/<bundle>/channels` with `apns-channel-id`.
        case delete(channelID: String)
        /// `POST /4/broadcasts/apps/<bundle>` with `apns-channel-id`.
        case broadcast(channelID: String, priority: Int, expiration: Int64, payload: [UInt8])
    }

    public var operation: Operation
    public var bundleID: String
    public var environment: APNsEnvironment
    /// `apns-request-id`: the same across retries of one step.
    public var requestID: UUID

    public init(operation: Operation, bundleID: String, environment: APNsEnvironment, requestID: UUID) {
        self.operation = operation
        self.bundleID = bundleID
        self.environment = environment
        self.requestID = requestID
    }

    /// The request for a channel delivery (`Delivery.Content.channel`).
    public static func forDelivery(_ delivery: Delivery, message: ChannelMessage) -> ChannelRequest {
        let operation: Operation
        switch message.step {
        case .create:
            operation = .create(storagePolicy: message.storagePolicy)
        case .delete:
            operation = .delete(channelID: message.apnsChannelID ?? "")
        case .update, .end:
            let content = message.state
            let payload = APNsPayload.liveActivity(
                event: content.event, timestamp: delivery.timestamp, contentState: content.contentState,
                staleDate: content.staleDate, dismissalDate: content.dismissalDate,
                relevanceScore: content.relevanceScore)
            operation = .broadcast(channelID: message.apnsChannelID ?? "", priority: delivery.priority,
                                   expiration: delivery.expiration, payload: payload.compactBytes)
        }
        return ChannelRequest(operation: operation, bundleID: delivery.bundleID, environment: delivery.environment,
                              requestID: delivery.id)
    }

    /// The HTTP/2 request, given the environment's management and broadcast origins.
    func http2Request(channels: HTTP2Origin, broadcast: HTTP2Origin, authorization: String) -> HTTP2Request {
        let bundle = bundleID.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? bundleID
        var headers: HPACKHeaders
        var body = ByteBuffer()
        let origin = if case .broadcast = operation { broadcast } else { channels }
        switch operation {
        case .create(let storagePolicy):
            headers = channels.headers(method: "POST", path: "/1/apps/\(bundle)/channels", capacity: 8)
            headers.add(name: "authorization", value: authorization)
            headers.add(name: "content-type", value: "application/json")
            let config: JSONValue = .object([
                "message-storage-policy": .integer(Int64(storagePolicy)), "push-type": .string("LiveActivity"),
            ])
            body = ByteBuffer(bytes: config.compactBytes)
        case .delete(let channelID):
            headers = channels.headers(method: "DELETE", path: "/1/apps/\(bundle)/channels", capacity: 8)
            headers.add(name: "authorization", value: authorization)
            headers.add(name: "apns-channel-id", value: channelID, indexing: .nonIndexable)
        case .broadcast(let channelID, let priority, let expiration, let payload):
            headers = broadcast.headers(method: "POST", path: "/4/broadcasts/apps/\(bundle)", capacity: 11)
            headers.add(name: "authorization", value: authorization)
            headers.add(name: "apns-channel-id", value: channelID, indexing: .nonIndexable)
            headers.add(name: "apns-push-type", value: "liveactivity")
            headers.add(name: "apns-priority", value: String(priority))
            headers.add(name: "apns-expiration", value: String(expiration), indexing: .nonIndexable)
            headers.add(name: "content-type", value: "application/json")
            body = ByteBuffer(bytes: payload)
        }
        headers.add(name: "apns-request-id", value: requestID.uuidString.lowercased(), indexing: .nonIndexable)
        return HTTP2Request(origin: origin, headers: headers, body: body)
    }
}

extension APNsClient {
    /// Sends channel requests with one provider token; answers in the same order (with `apns-channel-id`).
    public func send(_ requests: [ChannelRequest], providerToken: String)
        async -> [Result<(APNsResponse, channelID: String?), HTTP2ClientError>] {
        let authorization = "bearer \(providerToken)"
        let http2 = requests.map {
            $0.http2Request(channels: channelOrigins[$0.environment]!, broadcast: broadcastOrigins[$0.environment]!,
                            authorization: authorization)
        }
        return await http.send(http2).map { answer in
            answer.map { (Self.response($0), $0.headers.first(name: "apns-channel-id")) }
        }
    }
}
