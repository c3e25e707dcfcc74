import LiveRelayCore
import MCP

/// The tools as `tools/list` publishes them: descriptions written for a model, JSON Schema for the arguments.
extension RelayTools {
    /// A schema's `enum` from the type the relay decodes the argument as, so the two cannot drift apart.
    static func cases<Kind: CaseIterable & RawRepresentable>(_ kind: Kind.Type) -> Value
    where Kind.RawValue == String {
        .array(Kind.allCases.map { .string($0.rawValue) })
    }

    static let deviceSelector: [String: Value] = [
        "device_uuid": ["type": "string", "format": "uuid",
                        "description": "The device's uuid (from list_devices). Give this or deviceName, not both."],
        "deviceName": ["type": "string",
                       "description": .string("The device's name as registered, any case (e.g. \"Kitchen iPad\"). "
                           + "Give this or device_uuid, not both.")],
    ]

    static let activitySelector: [String: Value] = [
        "session_id": ["type": "string", "description": "The activity's session id (from list_live_activities)."],
        "id": ["type": "string", "format": "uuid", "description": "The activity's id. Give this or session_id."],
    ]

    static func schema(_ properties: [String: Value], required: [String] = []) -> Value {
        var schema: [String: Value] = [
            "type": "object", "properties": .object(properties), "additionalProperties": false,
        ]
        if !required.isEmpty { schema["required"] = .array(required.map { .string($0) }) }
        return .object(schema)
    }

    static let limit: Value = ["type": "integer", "minimum": 1, "maximum": .int(maximumLimit),
                               "description": "At most this many rows (default 50)."]

    static let definitions: [Tool] = [
        Tool(
            name: ToolName.setMessage.rawValue, title: "Set a device's Live Activity message",
            description: """
                Shows a short message on every Live Activity of one device (the Lock Screen and Dynamic Island on \
                iOS, the ongoing notification on Android), and on its open apps and dashboards. The relay pushes \
                it at once. Name the device by device_uuid or deviceName. An empty message ("") clears it. \
                Example: {"deviceName": "Kitchen iPad", "message": "Dinner is ready"}.
                """,
            inputSchema: schema(deviceSelector.merging([
                "message": ["type": "string", "maxLength": 4096,
                            "description": "The text to show; \"\" clears the message."],
            ]) { first, _ in first }, required: ["message"]),
            annotations: .init(destructiveHint: false, idempotentHint: true, openWorldHint: true)),
        Tool(
            name: ToolName.getMessage.rawValue, title: "Read a device's Live Activity message",
            description: """
                Reads the message currently shown on one device's Live Activities, with who set it and when. \
                Example: {"device_uuid": "6f1c2e4a-0b7d-4c55-9a1e-2d3b4c5d6e7f"}.
                """,
            inputSchema: schema(deviceSelector),
            annotations: .init(readOnlyHint: true, openWorldHint: false)),
        Tool(
            name: ToolName.listDevices.rawValue, title: "List devices",
            description: """
                Lists the registered devices, newest first: device_uuid, device_name, platform (ios or android), \
                the message on their Live Activities and how many activities are active. Use it to find the \
                device_uuid or name for the other tools. Example: {"limit": 20}.
                """,
            inputSchema: schema(["limit": limit]),
            annotations: .init(readOnlyHint: true, openWorldHint: false)),
        Tool(
            name: ToolName.listActivities.rawValue, title: "List Live Activities",
            description: """
                Lists Live Activities, newest first, with their status (active, ended or invalidated), current \
                content-state and last delivery (status, time, latency, the push service's reason when it failed). \
                Filter by status and device. Example: {"status": "active", "limit": 10}.
                """,
            inputSchema: schema([
                "status": ["type": "string", "enum": cases(ActivityStatus.self),
                           "description": "Only activities with this status."],
                "device_uuid": ["type": "string", "format": "uuid", "description": "Only this device's activities."],
                "limit": limit,
            ]),
            annotations: .init(readOnlyHint: true, openWorldHint: false)),
        Tool(
            name: ToolName.updateActivity.rawValue, title: "Update a Live Activity",
            description: """
                Sets the content-state of an active Live Activity; the relay pushes it to the phone at once. \
                content_state replaces the whole state and must match the app's ContentState (a JSON object). An \
                optional alert {title, body} lights the screen and shows a banner. The state it already shows is \
                not pushed again unless an alert comes with it. Example: \
                {"session_id": "order-42", "content_state": {"status": "On the way", "eta": 12}}.
                """,
            inputSchema: schema(activitySelector.merging([
                "content_state": ["type": "object", "description": "The new content-state (a JSON object)."],
                "alert": ["type": "object", "description": "Optional alert shown with the update.",
                          "properties": ["title": ["type": "string"], "subtitle": ["type": "string"],
                                         "body": ["type": "string"]]],
            ]) { first, _ in first }, required: ["content_state"]),
            annotations: .init(destructiveHint: false, idempotentHint: true, openWorldHint: true)),
        Tool(
            name: ToolName.endActivity.rawValue, title: "End a Live Activity",
            description: """
                Ends an active Live Activity with its last content-state. It stays on the Lock Screen until \
                dismissal_date (ISO 8601), or up to four hours when none is given. Example: \
                {"session_id": "order-42", "dismissal_date": "2026-11-23T18:30:00Z"}.
                """,
            inputSchema: schema(activitySelector.merging([
                "dismissal_date": ["type": "string", "format": "date-time",
                                   "description": "When the ended activity leaves the Lock Screen (ISO 8601)."],
            ]) { first, _ in first }),
            annotations: .init(destructiveHint: true, idempotentHint: false, openWorldHint: true)),
        Tool(
            name: ToolName.recentDeliveries.rawValue, title: "Recent deliveries",
            description: """
                Lists the relay's recent delivery outcomes (last 24 hours), newest first: status (sent, failed, \
                coalesced, retrying), event, transport (apns or fcm), the push service's status and reason, \
                latency. Use it to see whether a push reached a phone. Example: {"session_id": "order-42"}.
                """,
            inputSchema: schema([
                "session_id": ["type": "string", "description": "Only this activity's deliveries."],
                "status": ["type": "string", "enum": cases(DeliveryStatus.self),
                           "description": "Only deliveries with this status."],
                "limit": limit,
            ]),
            annotations: .init(readOnlyHint: true, openWorldHint: false)),
        Tool(
            name: ToolName.listChannels.rawValue, title: "List broadcast channels",
            description: """
                Lists broadcast channels by name: status (active, ended, deleted or failed), Apple's channel id, \
                the FCM topic, the content-state every subscriber sees and the last send. One update of a channel \
                reaches every phone that follows it. Example: {"status": "active"}.
                """,
            inputSchema: schema([
                "status": ["type": "string", "enum": cases(ChannelStatus.self),
                           "description": "Only channels with this status."],
                "limit": limit,
            ]),
            annotations: .init(readOnlyHint: true, openWorldHint: false)),
        Tool(
            name: ToolName.updateChannel.rawValue, title: "Update a broadcast channel",
            description: """
                Sets a channel's content-state (every subscriber's Live Activity changes at once: one broadcast at \
                Apple, one FCM topic message, one stream event) or its status: "ended" ends every subscriber's \
                activity, "deleted" also deletes the channel at Apple. An ended channel sends nothing more, nor \
                does a state the channel already shows. Example: \
                {"name": "match-42", "content_state": {"home": 2, "away": 1}}.
                """,
            inputSchema: schema([
                "name": ["type": "string", "description": "The channel's name."],
                "content_state": ["type": "object", "description": "The new content-state (a JSON object)."],
                "status": ["type": "string", "enum": ["ended", "deleted"],
                           "description": "End or delete the channel."],
            ], required: ["name"]),
            annotations: .init(destructiveHint: true, idempotentHint: true, openWorldHint: true)),
    ]
}
