import Foundation
import LiveRelayCore
import LiveRelayStore
import Logging
import MCP

/// The names of the tools (README "MCP").
enum ToolName: String, CaseIterable {
    case setMessage = "set_live_activity_message"
    case getMessage = "get_live_activity_message"
    case listDevices = "list_devices"
    case listActivities = "list_live_activities"
    case updateActivity = "update_live_activity"
    case endActivity = "end_live_activity"
    case recentDeliveries = "recent_deliveries"
    case listChannels = "list_channels"
    case updateChannel = "update_channel"
}

/// The relay's MCP tools over the store. Every tool writes through the database like any other writer (the
/// triggers deliver); a refusal is a tool result with `isError: true` and a sentence, and nothing is written.
public struct RelayTools: Sendable {
    public let store: RelayStore
    public let logger: Logger

    public init(store: RelayStore, logger: Logger) {
        self.store = store
        self.logger = logger
    }

    /// An MCP server with the tools registered (not started).
    public func makeServer() async -> Server {
        let server = Server(
            name: "liverelay", version: LiveRelayVersion.current, title: "LiveRelay",
            instructions: "Realtime Live Activity messages and updates for iOS and Android devices.",
            capabilities: .init(tools: .init(listChanged: false)))
        await server.withMethodHandler(ListTools.self) { _ in ListTools.Result(tools: Self.definitions) }
        await server.withMethodHandler(CallTool.self) { parameters in
            await call(parameters.name, arguments: parameters.arguments)
        }
        return server
    }

    /// Runs one tool: its answer, or its refusal as `isError`.
    public func call(_ name: String, arguments: [String: Value]?) async -> CallTool.Result {
        guard let tool = ToolName(rawValue: name) else {
            let known = ToolName.allCases.map(\.rawValue).joined(separator: ", ")
            return .init(content: [.note("There is no tool \(name). The tools are: \(known).")], isError: true)
        }
        do {
            return try await run(tool, arguments)
        } catch let error as StoreError {
            return .init(content: [.note(error.message)], isError: true)
        } catch {
            logger.error("tool failed", metadata: ["tool": "\(name)", "error": "\(type(of: error))"])
            return .init(content: [.note("The tool \(name) failed inside the relay; nothing was changed.")],
                         isError: true)
        }
    }

    private func run(_ tool: ToolName, _ values: [String: Value]?) async throws -> CallTool.Result {
        let deviceArguments: Set<String> = ["device_uuid", "deviceName", "device_name"]
        switch tool {
        case .setMessage:
            let arguments = try ToolArguments(values, allowed: deviceArguments.union(["message"]))
            guard let message = try arguments.string("message") else {
                throw StoreError.invalidArgument("message is required: the text to show, or \"\" to clear it")
            }
            let selector = try arguments.device()
            let (stored, active) = try await store.setMessage(message, for: selector, by: "mcp")
            let done = message.isEmpty
                ? "Cleared the message of device \(stored.device_uuid)"
                : "Set the message of device \(stored.device_uuid) to \"\(message)\""
            return try Self.result(active == 0
                ? "\(done); it has no active Live Activity, so nothing was pushed: the next one shows it."
                : "\(done); its \(active) active Live Activit\(active == 1 ? "y shows" : "ies show") it now.", stored)
        case .getMessage:
            let arguments = try ToolArguments(values, allowed: deviceArguments)
            let (device, stored) = try await store.message(for: try arguments.device())
            let uuid = device.uuidString.lowercased()
            guard let stored, !stored.message.isEmpty else {
                return .init(content: [.note("Device \(uuid) has no message.")],
                             structuredContent: .object(["device_uuid": .string(uuid), "message": .null]))
            }
            return try Self.result("Device \(uuid) shows \"\(stored.message)\".", stored)
        case .listDevices:
            let arguments = try ToolArguments(values, allowed: ["limit"])
            let limit = try arguments.integer("limit", default: 50, range: 1...Self.maximumLimit)
            let devices = try await store.devices(limit: limit)
            return try Self.result(Self.listed(devices.count, "device", "devices", limit: limit) + ".",
                                   ["devices": devices])
        case .listActivities:
            let arguments = try ToolArguments(values, allowed: ["status", "device_uuid", "limit"])
            var device: UUID?
            if let text = try arguments.string("device_uuid") {
                guard let uuid = UUID(uuidString: text) else {
                    throw StoreError.invalidArgument("device_uuid must be a UUID")
                }
                device = uuid
            }
            let limit = try arguments.integer("limit", default: 50, range: 1...Self.maximumLimit)
            let activities = try await store.activities(LiveActivityFilter(
                status: try arguments.choice("status", as: ActivityStatus.self), deviceUUID: device, limit: limit))
            let summary = Self.listed(activities.count, "live activity", "live activities", limit: limit)
            return try Self.result(summary + ".", ["activities": activities])
        case .updateActivity:
            let arguments = try ToolArguments(values, allowed: ["session_id", "id", "content_state", "alert"])
            guard let state = try arguments.object("content_state") else {
                throw StoreError.invalidArgument("content_state is required: a JSON object, like {\"progress\": 0.5}")
            }
            let (updated, effect) = try await store.updateActivity(
                try arguments.activity(), LiveActivityUpdate(contentState: state, alert: try arguments.alert("alert")))
            return try Self.result(effect == .queued
                ? "Updated live activity \(updated.sessionId); the push is on its way."
                : "Live activity \(updated.sessionId) already shows that content_state, so nothing was pushed "
                    + "(give an alert to push it anyway).", updated)
        case .endActivity:
            let arguments = try ToolArguments(values, allowed: ["session_id", "id", "dismissal_date"])
            let ended = try await store.endActivity(
                try arguments.activity(), dismissalDate: try arguments.date("dismissal_date"))
            return try Self.result("Ended live activity \(ended.sessionId).", ended)
        case .recentDeliveries:
            let arguments = try ToolArguments(values, allowed: ["session_id", "status", "limit"])
            let limit = try arguments.integer("limit", default: 50, range: 1...Self.maximumLimit)
            let deliveries = try await store.deliveries(DeliveryFilter(
                sessionID: try arguments.string("session_id"),
                status: try arguments.choice("status", as: DeliveryStatus.self), limit: limit))
            return try Self.result(Self.listed(deliveries.count, "delivery", "deliveries", limit: limit)
                                   + ", newest first.", ["deliveries": deliveries])
        case .listChannels:
            let arguments = try ToolArguments(values, allowed: ["status", "limit"])
            let limit = try arguments.integer("limit", default: 50, range: 1...Self.maximumLimit)
            let channels = try await store.channels(
                status: try arguments.choice("status", as: ChannelStatus.self), limit: limit)
            return try Self.result(Self.listed(channels.count, "channel", "channels", limit: limit) + ".",
                                   ["channels": channels])
        case .updateChannel:
            let arguments = try ToolArguments(values, allowed: ["name", "content_state", "status"])
            guard let name = try arguments.string("name") else {
                throw StoreError.invalidArgument("name is required: the channel's name (see list_channels)")
            }
            let state = try arguments.object("content_state")
            let status = try arguments.choice("status", as: ChannelStatus.self)
            guard state != nil || status != nil else {
                throw StoreError.invalidArgument("give content_state (a JSON object) or status (ended or deleted)")
            }
            guard status == nil || status == .ended || status == .deleted else {
                throw StoreError.invalidArgument("status may be ended or deleted")
            }
            let (channel, before, effect) = try await store.updateChannel(
                named: name, ChannelChange(contentState: state, status: status))
            return try Self.result(Self.channelSummary(channel, before: before, effect: effect), channel)
        }
    }

    /// What `update_channel` did, truthfully: a channel that is not active sends nothing, nor does a state it shows.
    static func channelSummary(_ channel: BroadcastChannelRecord, before: ChannelStatus, effect: UpdateEffect)
        -> String {
        let name = channel.name
        if channel.status != before { return "Channel \(name) is \(channel.status.rawValue) now." }
        switch effect {
        case .notActive:
            return "Channel \(name) is \(before.rawValue), so nothing was sent: an ended, deleted or failed channel "
                + "sends no more updates."
        case .unchanged: return "Channel \(name) already shows that content_state, so nothing was sent."
        case .queued: break
        }
        if channel.apnsChannelId == nil {
            return "Updated channel \(name); it reaches iOS subscribers as soon as Apple has created the channel."
        }
        return "Updated channel \(name); every subscriber gets it now."
    }

    /// The most rows a listing tool returns.
    static let maximumLimit = 500

    /// "3 devices", "1 device", "no devices"; and when the list is as long as its limit, that there may be more.
    static func listed(_ count: Int, _ singular: String, _ plural: String, limit: Int) -> String {
        let counted = switch count {
        case 0: "no \(plural)"
        case 1: "1 \(singular)"
        default: "\(count) \(plural)"
        }
        let said = counted.prefix(1).uppercased() + counted.dropFirst()
        guard count >= limit else { return said }
        return limit < Self.maximumLimit
            ? "\(said) (the limit: there may be more; give a larger limit, up to \(Self.maximumLimit))"
            : "\(said) (the most one call lists: there may be more)"
    }

    /// A summary sentence and the value as JSON text, with the value as structured content too.
    static func result(_ summary: String, _ value: some Codable) throws -> CallTool.Result {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let json = String(decoding: try encoder.encode(value), as: UTF8.self)
        return try .init(content: [.note(summary), .note(json)], structuredContent: value)
    }
}

extension Tool.Content {
    /// Plain text content.
    static func note(_ text: String) -> Self { .text(text: text, annotations: nil, _meta: nil) }
}
