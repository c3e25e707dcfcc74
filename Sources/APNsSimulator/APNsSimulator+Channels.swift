import Foundation
import HTTPTypes
import Hummingbird
import LiveRelayCore
import NIOCore

/// Apple's broadcast push (iOS 18) as Apple specifies it: the Channel Management API (`/1/apps/<bundle>/channels`,
/// `/1/apps/<bundle>/all-channels`) and broadcast sends (`/4/broadcasts/apps/<bundle>`), each under the same
/// environment prefix as pushes (`/sandbox/...` for the sandbox).
extension APNsSimulator {
    /// The most channels an app may have per environment.
    static let channelLimit = 10_000
    /// The largest broadcast payload.
    static let broadcastMaximumSize = 5120

    /// One channel the simulator created.
    public struct SimulatedChannel: Sendable, Codable, Equatable {
        public var channelID: String
        public var bundleID: String
        public var environment: String
        public var storagePolicy: Int
        public var pushType: String
    }

    /// One broadcast the simulator accepted.
    public struct RecordedBroadcast: Sendable, Codable, Equatable {
        public var sequence: Int
        public var channelID: String
        public var bundleID: String
        public var environment: String
        public var pushType: String
        public var priority: String?
        public var expiration: String
        public var requestID: String?
        public var topic: String?
        public var receivedAt: Double
        public var payload: JSONValue
    }

    func addChannelRoutes(to router: Router<SimulatorContext>) {
        for prefix in ["", ":environment/"] {
            router.post("\(prefix)1/apps/:bundle/channels") { request, context in
                await self.answerChannel(request, context) { try self.createChannel($0, $1, $2, $3) }
            }
            router.delete("\(prefix)1/apps/:bundle/channels") { request, context in
                await self.answerChannel(request, context) { request, bundle, env, _ in
                    try self.deleteChannel(request, bundle, env)
                }
            }
            router.get("\(prefix)1/apps/:bundle/channels") { request, context in
                await self.answerChannel(request, context) { request, bundle, env, _ in
                    try self.readChannel(request, bundle, env)
                }
            }
            router.get("\(prefix)1/apps/:bundle/all-channels") { request, context in
                await self.answerChannel(request, context) { _, bundle, environment, _ in
                    let ids = self.state.withLock { state in
                        state.channels.values.filter { $0.bundleID == bundle && $0.environment == environment }
                            .map(\.channelID).sorted()
                    }
                    return try Self.json(.ok, ["channels": ids])
                }
            }
            router.post("\(prefix)4/broadcasts/apps/:bundle") { request, context in
                await self.answerChannel(request, context) { try self.broadcast($0, $1, $2, $3) }
            }
        }
        router.get("sim/channels") { _, _ in
            try Self.json(.ok, ["channels": self.channels()])
        }
        router.get("sim/broadcasts") { request, _ in
            let since = request.uri.queryParameters.get("since", as: Int.self) ?? 0
            return try Self.json(.ok, ["broadcasts": self.broadcasts(since: since)])
        }
        router.delete("sim/broadcasts") { _, _ in
            self.state.withLock { $0.broadcasts.removeAll() }
            return Response(status: .noContent)
        }
    }

    /// Every channel, in creation order.
    public func channels() -> [SimulatedChannel] {
        state.withLock { state in state.channelOrder.compactMap { state.channels[$0] } }
    }

    /// Accepted broadcasts with a sequence above `since`.
    public func broadcasts(since: Int = 0) -> [RecordedBroadcast] {
        state.withLock { $0.broadcasts.filter { $0.sequence > since } }
    }

    private typealias ChannelHandler = (Request, String, String, ByteBuffer) throws -> Response

    /// Authenticates, reads the body, runs the handler, and answers a refusal as APNs does (JSON `reason`).
    private func answerChannel(_ request: Request, _ context: SimulatorContext,
                               _ handler: ChannelHandler) async -> Response {
        let faults = state.withLock { $0.faults }
        if faults.delayMilliseconds > 0 { try? await Task.sleep(for: .milliseconds(faults.delayMilliseconds)) }
        let bundle = context.parameters.get("bundle") ?? ""
        let environment = context.parameters.get("environment") ?? "production"
        let requestID = request.headers[HTTPField.Name("apns-request-id")!]
        do {
            guard environment == "production" || environment == "sandbox" else {
                throw Rejection(status: 404, reason: "BadPath", detail: "unknown environment \(environment)")
            }
            let body = try await request.body.collect(upTo: 64 * 1024)
            _ = try authenticate(request.headers[.authorization], faults: faults)
            let isBroadcast = request.uri.path.contains("/4/broadcasts/")
            if !isBroadcast, faults.channelManagementRate503 > 0,
               Double.random(in: 0..<1) < faults.channelManagementRate503 {
                throw Rejection(status: 503, reason: "ServiceUnavailable", detail: "fault injected",
                                retryAfter: faults.retryAfterSeconds)
            }
            var response = try handler(request, bundle, environment, body)
            if let requestID { response.headers[HTTPField.Name("apns-request-id")!] = requestID }
            state.withLock { $0.responses[String(response.status.code), default: 0] += 1 }
            return response
        } catch let rejection as Rejection {
            return answer(rejection, subject: "\(request.method) \(request.uri.path)",
                          echoing: requestID.map { (HTTPField.Name("apns-request-id")!, $0) })
        } catch {
            state.withLock { $0.responses["413", default: 0] += 1 }
            return Response(status: .init(code: 413), headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(string: #"{"reason":"PayloadTooLarge"}"#)))
        }
    }

    private func createChannel(_ request: Request, _ bundle: String, _ environment: String,
                               _ body: ByteBuffer) throws -> Response {
        guard case .object(let config)? = try? JSONValue(parsing: String(buffer: body)) else {
            throw Rejection(status: 400, reason: "BadPayload", detail: "the body is not a JSON object")
        }
        guard case .string("LiveActivity")? = config["push-type"] else {
            throw Rejection(status: 400, reason: "InvalidPushType", detail: "push-type must be LiveActivity")
        }
        guard case .integer(let policy)? = config["message-storage-policy"], policy == 0 || policy == 1 else {
            throw Rejection(status: 400, reason: "CannotCreateChannelConfig",
                            detail: "message-storage-policy must be 0 or 1")
        }
        var random = SystemRandomNumberGenerator()
        let id = Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &random) }).base64EncodedString()
        let created = try state.withLock { state -> Bool in
            let count = state.channels.values.filter { $0.bundleID == bundle && $0.environment == environment }.count
            guard count < Self.channelLimit else { return false }
            state.channels[Self.channelKey(environment, bundle, id)] = SimulatedChannel(
                channelID: id, bundleID: bundle, environment: environment, storagePolicy: Int(policy),
                pushType: "LiveActivity")
            state.channelOrder.append(Self.channelKey(environment, bundle, id))
            if state.channelOrder.count > 100_000 { throw Rejection(status: 500, reason: "InternalServerError",
                                                                     detail: "the simulator is full") }
            return true
        }
        guard created else {
            throw Rejection(status: 400, reason: "CannotCreateChannelConfig",
                            detail: "\(bundle) has \(Self.channelLimit) channels in \(environment) already")
        }
        saveChannels()
        printLine("apns-sim: 201 channel created \(environment) \(bundle) \(id)")
        return Response(status: .created, headers: [HTTPField.Name("apns-channel-id")!: id])
    }

    private func deleteChannel(_ request: Request, _ bundle: String, _ environment: String) throws -> Response {
        let id = try channelID(request, bundle: bundle, environment: environment)
        state.withLock { state in
            let key = Self.channelKey(environment, bundle, id)
            state.channels[key] = nil
            state.channelOrder.removeAll { $0 == key }
        }
        saveChannels()
        printLine("apns-sim: 204 channel deleted \(environment) \(bundle) \(id)")
        return Response(status: .noContent)
    }

    private func readChannel(_ request: Request, _ bundle: String, _ environment: String) throws -> Response {
        let id = try channelID(request, bundle: bundle, environment: environment)
        let channel = state.withLock { $0.channels[Self.channelKey(environment, bundle, id)] }!
        return try Self.json(.ok, JSONValue.object([
            "message-storage-policy": .integer(Int64(channel.storagePolicy)), "push-type": .string(channel.pushType),
        ]))
    }

    /// The `apns-channel-id` of a request, which must name a channel of this app and environment.
    private func channelID(_ request: Request, bundle: String, environment: String) throws -> String {
        guard let id = request.headers[HTTPField.Name("apns-channel-id")!], !id.isEmpty else {
            throw Rejection(status: 400, reason: "MissingChannelId", detail: "no apns-channel-id header")
        }
        guard let bytes = Data(base64Encoded: id), !bytes.isEmpty else {
            throw Rejection(status: 400, reason: "BadChannelId", detail: "apns-channel-id is not base64")
        }
        guard state.withLock({ $0.channels[Self.channelKey(environment, bundle, id)] }) != nil else {
            throw Rejection(status: 400, reason: "ChannelNotRegistered",
                            detail: "no channel \(id) for \(bundle) in \(environment)")
        }
        return id
    }

    private func broadcast(_ request: Request, _ bundle: String, _ environment: String,
                           _ body: ByteBuffer) throws -> Response {
        func header(_ name: String) -> String? { request.headers[HTTPField.Name(name)!] }
        let id = try channelID(request, bundle: bundle, environment: environment)
        let channel = state.withLock { $0.channels[Self.channelKey(environment, bundle, id)] }!
        guard header("apns-push-type") == "liveactivity" else {
            let given = header("apns-push-type") ?? "none"
            throw Rejection(status: 400, reason: "InvalidPushType",
                            detail: "a broadcast needs apns-push-type liveactivity, got \(given)")
        }
        let priority = header("apns-priority")
        if let priority, !["1", "5", "10"].contains(priority) {
            throw Rejection(status: 400, reason: "BadPriority", detail: "apns-priority \(priority)")
        }
        guard let expiration = header("apns-expiration"), let expiry = Int64(expiration) else {
            throw Rejection(status: 400, reason: "BadExpirationDate",
                            detail: "apns-expiration is missing or not a number")
        }
        if channel.storagePolicy == 0, expiry != 0 {
            throw Rejection(status: 400, reason: "BadExpirationDate",
                            detail: "a channel with message storage policy 0 takes apns-expiration 0, got \(expiry)")
        }
        guard body.readableBytes > 0 else { throw Rejection(status: 400, reason: "PayloadEmpty", detail: "empty body") }
        guard body.readableBytes <= Self.broadcastMaximumSize else {
            throw Rejection(status: 413, reason: "PayloadTooLarge", detail: "\(body.readableBytes) bytes")
        }
        guard let payload = try? JSONValue(parsing: String(buffer: body)), case .object(let root) = payload,
              case .object(let aps)? = root["aps"] else {
            throw Rejection(status: 400, reason: "BadPayload", detail: "the body is not a JSON object with aps")
        }
        try Self.validateLiveActivity(aps)
        if case .string("start")? = aps["event"] {
            throw Rejection(status: 400, reason: "BadPayload", detail: "a broadcast updates or ends; it cannot start")
        }
        let faults = state.withLock { $0.faults }
        if let reason = faults.channelErrors[id] {
            throw Rejection(status: SimulatorFaults.status(for: reason), reason: reason,
                            detail: "fault injected for this channel")
        }
        let roll = Double.random(in: 0..<1)
        if roll < faults.rate503 {
            throw Rejection(status: 503, reason: "ServiceUnavailable", detail: "fault injected",
                            retryAfter: faults.retryAfterSeconds)
        }
        if roll < faults.rate503 + faults.rate429 {
            throw Rejection(status: 429, reason: "TooManyRequests", detail: "fault injected",
                            retryAfter: faults.retryAfterSeconds ?? 1)
        }
        state.withLock { state in
            state.sequence += 1
            state.broadcasts.append(RecordedBroadcast(
                sequence: state.sequence, channelID: id, bundleID: bundle, environment: environment,
                pushType: "liveactivity", priority: priority, expiration: expiration,
                requestID: header("apns-request-id"), topic: header("apns-topic"),
                receivedAt: Date().timeIntervalSince1970, payload: payload))
            if state.broadcasts.count > capacity { state.broadcasts.removeFirst(state.broadcasts.count - capacity) }
        }
        printLine("apns-sim: 200 broadcast \(environment) \(bundle) \(id) \(payload.compactText)")
        return Response(status: .ok)
    }

    static func channelKey(_ environment: String, _ bundle: String, _ id: String) -> String {
        "\(environment)|\(bundle)|\(id)"
    }

    private func printLine(_ line: String) {
        if printPushes { FileHandle.standardOutput.write(Data((line + "\n").utf8)) }
    }
}
