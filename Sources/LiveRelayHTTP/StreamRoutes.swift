import Foundation
import HTTPTypes
import Hummingbird
import LiveRelayStream
import LiveRelayCore
import LiveRelayHTTPServer
import LiveRelayStore
import NIOConcurrencyHelpers
import NIOCore
import ServiceLifecycle

/// `GET /v1/stream?channel=device:<uuid>&channel=session:<id>`: Server-Sent Events from the broadcast log,
/// resumable with `Last-Event-ID`, with a heartbeat comment at least every 15 seconds.
public struct StreamRoutes: Sendable {
    /// The stream's path.
    public static let path = "/v1/stream"
    /// The most missed events one resuming answer carries; a client further behind reconnects for the rest.
    static let historyPageSize = 1024
    /// Channels one stream may follow.
    static let channelLimit = 100

    let hub: BroadcastHub
    let auth: Authenticator
    let store: RelayStore
    /// Registers the streams that make an activity foreground (nil: not tracked).
    let presence: PresenceTracker?
    /// The broadcast channels found lately: streams following them need not ask the database again.
    let knownChannels = NIOLockedValueBox(KnownChannelNames())

    func register(on router: Router<BasicRequestContext>) {
        router.get(RouterPath(Self.path)) { request, _ in try await stream(request) }
    }

    func stream(_ request: Request) async throws -> Response {
        let caller = auth.caller(for: request)
        guard caller.isAdmin || caller.deviceUUID != nil || caller.secretHash != nil else {
            throw APIError.unauthorized(caller)
        }
        let given = request.uri.queryParameters.getAll("channel").map { String($0) }
        guard !given.isEmpty else {
            throw APIError.badRequest("channel is required (\(StreamChannel.forms))")
        }
        guard given.count <= Self.channelLimit else {
            throw APIError.badRequest(
                "a stream follows at most \(Self.channelLimit) channels; \(given.count) were given")
        }
        let parsed = try given.map { text in
            try StreamChannel.parse(text).mapError { APIError.badRequest($0.sentence) }.get()
        }
        try await authorize(caller, channels: parsed)
        let unknown = await unknownChannels(in: parsed)
        let channels = parsed.map(\.name)
        let resumePoint = ResumePoint(header: request.headers[HTTPField.Name("Last-Event-ID")!],
                                      query: request.uri.queryParameters.get("lastEventId"))

        do {
            try await hub.waitUntilStarted()
        } catch {
            throw APIError(status: .serviceUnavailable,
                           message: "the stream is not ready yet (the database is unreachable); retry")
        }
        await hub.catchUp()
        let subscriber = StreamSubscriber(limit: StreamSubscriber.defaultLimit)
        let (id, cursor) = hub.subscribe(channels: Set(channels), sink: subscriber)
        var prefix = [SSEFrame.connected] + unknown.map(SSEFrame.noChannel(named:))
        let headers: HTTPFields = [
            .contentType: "text/event-stream", .cacheControl: "no-cache", HTTPField.Name("X-Accel-Buffering")!: "no",
        ]
        do {
            if case .unreadable(let text) = resumePoint { prefix.append(SSEFrame.unreadable(text)) }
            if case .after(let lastEventID) = resumePoint {
                let page = try await hub.history(
                    after: lastEventID, through: cursor, channels: channels, limit: Self.historyPageSize)
                let resync = page.resync.map { [SSEFrame.resync($0, after: lastEventID)] } ?? []
                guard page.isComplete else {
                    // Further behind than a page: this answer is the page, and the client comes straight back for the
                    // next one with its last id (as a client that falls behind a live stream does).
                    hub.unsubscribe(id)
                    // A page cut at the read's limit before a page of events ends on the position read up to: an `id:`
                    // alone, which sets the client's last id without an event.
                    let position = page.scannedThrough.map { [SSEFrame.position($0)] } ?? []
                    let frames = [SSEFrame.morePages] + resync + page.events.map(SSEFrame.encode) + position
                    return Response(status: .ok, headers: headers, body: ResponseBody { writer in
                        try await writer.write(contentsOf: frames)
                        try await writer.finish(nil)
                    })
                }
                prefix += resync + page.events.map(SSEFrame.encode)
            }
        } catch {
            hub.unsubscribe(id)
            throw error
        }
        let hub = self.hub
        // The app is open from the moment its stream's head is sent: the cluster knows before the head goes.
        let presence = self.presence, requestHeaders = request.headers
        let presenceID = await presence?.enter(Self.presenceKeys(of: caller, channels: parsed))
        let unsubscribe: @Sendable (Bool) -> Void = { stopping in
            hub.unsubscribe(id, stopping: stopping)
            if let presenceID { presence?.leave(presenceID) }
        }
        return Response(status: .ok, headers: headers, body: ResponseBody { [prefix] writer in
            // A stream that is its connection's first request: the hub writes to the connection itself, and no task
            // waits for the client (the connection's close or the server's stop ends the subscription).
            if let detachable = writer as? DetachableBodyWriter {
                let connection = detachable.detach()
                connection.closeFuture.whenComplete { _ in unsubscribe(false) }
                connection.onQuiesce { unsubscribe(true) }
                subscriber.attach(connection, prefix: prefix)
                return
            }
            defer { unsubscribe(false) }
            // On a kept-alive connection, a client that goes is noticed when its connection closes or it ends its
            // side, not at a failed write up to two heartbeats later: its subscription ends, and its app is no longer
            // open.
            ConnectionCloseRegistry.onClose(of: requestHeaders) { unsubscribe(false) }
            let stream = subscriber.forward()
            // The server waits for every response to end before it stops, so on graceful shutdown an open stream
            // ends itself: its subscription is finished, which ends the loop below.
            try await withGracefulShutdownHandler {
                try await writer.write(contentsOf: prefix)
                for await item in stream { try await writer.write(SSEFrame.encode(item)) }
            } onGracefulShutdown: {
                unsubscribe(false)
            }
            if Task.isShuttingDownGracefully { try await writer.write(SSEFrame.farewell) }
            try await writer.finish(nil)
        })
    }

    /// The broadcast channels a stream follows that no row names, in the order given; none when the database cannot
    /// say (a hint is not worth failing a stream for). Channels found in the last seconds are not asked again.
    func unknownChannels(in channels: [StreamChannel]) async -> [String] {
        let names = channels.compactMap { if case .broadcast(let name) = $0 { name } else { nil } }
        guard !names.isEmpty else { return [] }
        let asked = ContinuousClock.now
        let toAsk = knownChannels.withLockedValue { $0.unknown(among: names, at: asked) }
        guard !toAsk.isEmpty, let known = try? await store.existingChannels(among: toAsk) else { return [] }
        knownChannels.withLockedValue { $0.found(known, at: asked) }
        return toAsk.filter { !known.contains($0) }
    }

    /// What an authorised stream says about open apps: a device token following its own `device:` channel, a pairing
    /// secret following its `session:` channels. The admin's streams (a dashboard) never count.
    static func presenceKeys(of caller: Caller, channels: [StreamChannel]) -> [PresenceKey] {
        guard !caller.isAdmin else { return [] }
        var keys: [PresenceKey] = []
        for channel in channels {
            switch channel {
            case .device(let uuid) where caller.deviceUUID == uuid:
                keys.append(.device(uuid))
            case .session(let session):
                if let hash = caller.secretHash { keys.append(.session(secretHash: hash, sessionID: session)) }
            default:
                continue
            }
        }
        return keys
    }

    /// Admin: any channel, `admin` (delivery summaries) and `*` (every channel). A device token: its own `device:`
    /// channel. A pairing secret: `session:` channels of its sessions.
    private func authorize(_ caller: Caller, channels: [StreamChannel]) async throws {
        var sessions: [String] = []
        for channel in channels {
            switch channel {
            case .admin, .every:
                guard caller.isAdmin else { throw APIError.forbidden("only the admin may read \(channel.name)") }
            case .device(let uuid):
                guard caller.isAdmin || caller.deviceUUID == uuid else {
                    throw APIError.forbidden("not allowed to read \(channel.name)")
                }
            case .session(let id):
                if !caller.isAdmin { sessions.append(id) }
            case .broadcast:
                // A channel is for everyone who follows it: any device of this relay may read it.
                guard caller.isAdmin || caller.deviceUUID != nil else {
                    throw APIError.forbidden("reading \(channel.name) needs the admin token or a device token")
                }
            }
        }
        guard !sessions.isEmpty else { return }
        guard let hash = caller.secretHash else {
            throw APIError.forbidden("reading session channels needs the pairing secret (X-Relay-Secret)")
        }
        guard Set(try await store.sessions(of: hash, among: sessions)).isSuperset(of: sessions) else {
            throw APIError.forbidden("not allowed to read a session that is not registered under this secret")
        }
    }
}
