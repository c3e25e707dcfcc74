import Foundation
import Hummingbird
import LiveRelayCore
import LiveRelayStore

/// Broadcast channels (README "Broadcast channels"): the API writes `broadcast_channel` like any SQL writer; the
/// triggers and the delivery workers do the rest. Reading one channel is open to device tokens (apps follow it).
struct ChannelRoutes: Sendable {
    let store: RelayStore
    let auth: Authenticator

    /// The admin's routes (on an admin-only group).
    func register(admin: RouterGroup<BasicRequestContext>) {
        admin.get("v1/channels") { request, _ in
            let parameters = request.uri.queryParameters
            let status = try parameters.choice("status", as: ChannelStatus.self)
            let limit = try parameters.wholeNumber("limit", default: 100, range: 1...1000)
            return try encodedResponse(.ok, try await store.channels(status: status, limit: limit))
        }
        admin.post("v1/channels") { request, _ in
            let body = try await request.decode(as: CreateChannelBody.self)
            return try encodedResponse(.created, try await store.createChannel(body.channel))
        }
        admin.patch("v1/channels/:name") { request, context in
            let body = try await request.decode(as: UpdateChannelBody.self)
            let (channel, _, effect) = try await store.updateChannel(named: try Self.name(context), body.change)
            return try encodedResponse(.ok, UpdateAnswer(record: channel, push: effect))
        }
        admin.delete("v1/channels/:name") { _, context in
            _ = try await store.updateChannel(named: try Self.name(context), ChannelChange(status: .deleted))
            return Response(status: .noContent)
        }
        admin.post("v1/channels/:name/start") { request, context in
            let body = try await request.decode(as: StartChannelBody.self)
            let started = try await store.startChannel(
                named: try Self.name(context), devices: body.devices, attributes: body.attributes, alert: body.alert)
            return try encodedResponse(.ok, started)
        }
    }

    /// The route apps read too: the admin or any device token.
    func register(on router: Router<BasicRequestContext>) {
        router.get("v1/channels/:name") { request, context in
            let caller = auth.caller(for: request)
            guard caller.isAdmin || caller.deviceUUID != nil else {
                throw caller.secretHash != nil
                    ? APIError.forbidden("reading a channel needs the admin token or a device token")
                    : APIError.unauthorized(caller)
            }
            return try encodedResponse(.ok, try await store.channel(named: try Self.name(context)))
        }
    }

    /// The channel named in the path, percent-decoded: a name may hold `%` (APNs allows it), which a client sends
    /// as `%25`. A `%` that starts no escape is taken as written.
    static func name(_ context: BasicRequestContext) throws -> String {
        guard let raw = context.parameters.get("name") else {
            throw APIError.badRequest("the channel name must be 1 to 64 characters")
        }
        let name = raw.removingPercentEncoding ?? raw
        guard (1...64).contains(name.count) else {
            throw APIError.badRequest("the channel name must be 1 to 64 characters")
        }
        return name
    }
}
