import Foundation
import Hummingbird
import LiveRelayCore
import NIOCore
import Logging
import PostgresNIO

/// The generic Live Activity API (admin): register a per-activity token, list, read, update, end, rotate the token.
/// It writes `activity_registration` like any SQL writer; the triggers deliver.
struct LiveActivityRoutes: Sendable {
    let auth: Authenticator
    let database: RouteDatabase
    let defaultBundleID: String?

    /// Activities created through this API live under this pairing-secret namespace.
    static let namespace = secretHash("liverelay-api")

    func register(on router: Router<BasicRequestContext>) {
        router.post("v1/live-activities") { request, _ in try auth.requireAdmin(request); return try await create(request) }
        router.get("v1/live-activities") { request, _ in try auth.requireAdmin(request); return try await list(request) }
        router.get("v1/live-activities/:id") { request, context in
            try auth.requireAdmin(request)
            return try await show(try Self.id(context))
        }
        router.patch("v1/live-activities/:id") { request, context in
            try auth.requireAdmin(request)
            return try await update(try Self.id(context), request)
        }
        router.delete("v1/live-activities/:id") { request, context in
            try auth.requireAdmin(request)
            return try await end(try Self.id(context), request)
        }
        router.put("v1/live-activities/:id/token") { request, context in
            try auth.requireAdmin(request)
            return try await rotate(try Self.id(context), request)
        }
    }

    static func id(_ context: BasicRequestContext) throws -> UUID {
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else { throw APIError.badRequest("id must be a UUID") }
        return id
    }

    static let columns = """
        json_build_object('id', id, 'platform', platform, 'status', status, 'activityType', attributes_type,
            'attributes', attributes, 'contentState', content_state, 'externalId', external_id, 'userId', user_id,
            'deviceUUID', device_uuid, 'bundleId', bundle_id, 'apnsEnv', apns_env, 'tokenSuffix', right(activity_token, 8),
            'staleDate', stale_date, 'dismissalDate', dismissal_date, 'priority', priority,
            'createdAt', created_at, 'updatedAt', updated_at)::text
        """

    func create(_ request: Request) async throws -> Response {
        let body = try await JSONBody.read(request)
        let platform = try body.platform()
        let token = try Self.token(body)
        // An Android app is named by its package (bundleId too); FCM needs none, so it may be left out.
        guard let bundle = try body.optionalString("bundleId", maxLength: 255) ?? defaultBundleID
            ?? (platform == .android ? "android" : nil) else {
            throw APIError.badRequest("bundleId is required (the relay has no APNS_DEFAULT_BUNDLE_ID)")
        }
        let environment = (try body.optionalEnvironment("apnsEnv") ?? .production).rawValue
        let activityType = try body.optionalString("activityType", maxLength: 255)
        let attributes = try body.optionalObject("attributes").map { String(decoding: $0.compactBytes, as: UTF8.self) }
        let contentState = try body.optionalObject("contentState").map { String(decoding: $0.compactBytes, as: UTF8.self) }
        let externalID = try body.optionalString("externalId", maxLength: 255)
        let userID = try body.optionalString("userId", maxLength: 255)
        let device = try body.optionalString("deviceUUID", maxLength: 64).map { text -> UUID in
            guard let uuid = UUID(uuidString: text) else { throw APIError.badRequest("deviceUUID must be a UUID") }
            return uuid
        }
        let id = UUID()
        let session = externalID ?? "la_\(id.uuidString.lowercased())"
        let text = try await writing { connection in
            let created = try await Self.one(connection, """
                INSERT INTO activity_registration (id, secret_hash, session_id, activity_token, bundle_id, apns_env, platform,
                    device_uuid, attributes_type, attributes, content_state, external_id, user_id)
                VALUES (\(id), \(Self.namespace), \(session), \(token), \(bundle), \(environment), \(platform.rawValue),
                    \(device), \(activityType), \(attributes)::jsonb, \(contentState)::jsonb, \(externalID), \(userID))
                ON CONFLICT (secret_hash, session_id) DO UPDATE SET activity_token = excluded.activity_token, status = 'active',
                    content_state = coalesce(excluded.content_state, activity_registration.content_state)
                RETURNING \(unescaped: Self.columns)
                """, logger: database.logger)
            if platform == .android, contentState != nil {
                // An Android app shows its ongoing notification when a `start` message arrives (iOS activities are
                // started on the phone, or by push-to-start).
                try await connection.query("""
                    INSERT INTO delivery_outbox (kind, activity_id, event_type, secret_hash, session_id, platform)
                    SELECT 'activity', id, 'start', secret_hash, session_id, 'android'
                    FROM activity_registration WHERE secret_hash = \(Self.namespace) AND session_id = \(session)
                    """, logger: database.logger)
                try await connection.query("SELECT liverelay_wake()", logger: database.logger)
            }
            return created
        }
        return rawJSON(.created, text ?? "{}")
    }

    func list(_ request: Request) async throws -> Response {
        let parameters = request.uri.queryParameters
        let status = parameters.get("status"), platform = parameters.get("platform")
        let externalID = parameters.get("externalId"), userID = parameters.get("userId")
        func integer(_ name: String, default value: Int, range: ClosedRange<Int>) throws -> Int {
            guard let text = parameters.get(name) else { return value }
            guard let number = Int(text), range.contains(number) else {
                throw APIError.badRequest("\(name) must be a whole number in \(range.lowerBound)...\(range.upperBound)")
            }
            return number
        }
        let limit = try integer("limit", default: 100, range: 1...1000)
        let offset = try integer("offset", default: 0, range: 0...Int(Int32.max))
        let rows = try await database.rows("""
            SELECT \(unescaped: Self.columns) FROM activity_registration
            WHERE (\(status)::text IS NULL OR status = \(status)) AND (\(platform)::text IS NULL OR platform = \(platform))
              AND (\(externalID)::text IS NULL OR external_id = \(externalID)) AND (\(userID)::text IS NULL OR user_id = \(userID))
            ORDER BY created_at DESC, id LIMIT \(limit) OFFSET \(offset)
            """, as: String.self)
        return rawJSON(.ok, "[" + rows.joined(separator: ",") + "]")
    }

    func show(_ id: UUID) async throws -> Response {
        guard let text = try await database.rows("SELECT \(unescaped: Self.columns) FROM activity_registration WHERE id = \(id)", as: String.self).first else {
            throw APIError.notFound("no live activity \(id)")
        }
        return rawJSON(.ok, text)
    }

    /// `{contentState, alert?: {title, body}, staleDate?, relevanceScore?, priority?: 5|10}`
    func update(_ id: UUID, _ request: Request) async throws -> Response {
        let body = try await JSONBody.read(request)
        guard let state = try body.optionalObject("contentState") else { throw APIError.badRequest("contentState is required") }
        let contentState = String(decoding: state.compactBytes, as: UTF8.self)
        let alert = try body.optionalObject("alert").map { String(decoding: $0.compactBytes, as: UTF8.self) } ?? ""
        let staleDate = try Self.date(body, "staleDate")
        var requestedPriority: Int32?
        if let value = body.members["priority"], value != .null {
            guard value == .integer(5) || value == .integer(10) else { throw APIError.badRequest("priority must be 5 or 10") }
            requestedPriority = value == .integer(5) ? 5 : 10
        }
        let priority = requestedPriority.map(Int16.init)
        let relevance: Double?
        switch body.members["relevanceScore"] {
        case nil, .null?: relevance = nil
        case .integer(let value)?: relevance = Double(value)
        case .number(let value)?: relevance = value
        default: throw APIError.badRequest("relevanceScore must be a number")
        }
        let text = try await writing { connection in
            try await connection.query("SELECT set_config('liverelay.alert', \(alert), true)", logger: database.logger)
            return try await Self.one(connection, """
                UPDATE activity_registration SET content_state = \(contentState)::jsonb,
                    stale_date = coalesce(\(staleDate), stale_date), priority = coalesce(\(priority), priority),
                    relevance_score = coalesce(\(relevance), relevance_score)
                WHERE id = \(id) AND status = 'active'
                RETURNING \(unescaped: Self.columns)
                """, logger: database.logger)
        }
        guard let text else { throw APIError.notFound("no active live activity \(id)") }
        return rawJSON(.ok, text)
    }

    /// Ends the activity: an `end` push, with `dismissalDate` (epoch seconds or ISO 8601) when given.
    func end(_ id: UUID, _ request: Request) async throws -> Response {
        var dismissal = try request.uri.queryParameters.get("dismissalDate").flatMap { $0.isEmpty ? nil : $0 }
            .map { try Self.parseDate(.string(String($0)), "dismissalDate") }
        if dismissal == nil, let body = try? await JSONBody.read(request) { dismissal = try Self.date(body, "dismissalDate") }
        let finalState = dismissal
        let text = try await writing { connection in
            try await Self.one(connection, """
                UPDATE activity_registration SET status = 'ended', dismissal_date = coalesce(\(finalState), dismissal_date)
                WHERE id = \(id) AND status = 'active' RETURNING \(unescaped: Self.columns)
                """, logger: database.logger)
        }
        guard let text else { throw APIError.notFound("no active live activity \(id)") }
        return rawJSON(.ok, text)
    }

    /// `{token}`: ActivityKit rotated the activity's push token.
    func rotate(_ id: UUID, _ request: Request) async throws -> Response {
        let token = try Self.token(try await JSONBody.read(request))
        let text = try await writing { connection in
            try await Self.one(connection, """
                UPDATE activity_registration SET activity_token = \(token),
                    status = CASE WHEN status = 'invalidated' THEN 'active' ELSE status END
                WHERE id = \(id) RETURNING \(unescaped: Self.columns)
                """, logger: database.logger)
        }
        guard let text else { throw APIError.notFound("no live activity \(id)") }
        return rawJSON(.ok, text)
    }

    /// The push token: `token` or `pushToken` (APNs), or `fcmToken` (FCM registration token, as Sendora names it).
    static func token(_ body: JSONBody) throws -> String {
        guard let fcm = try body.optionalString("fcmToken", maxLength: 512) else {
            return try body.string("token", or: "pushToken", maxLength: 512)
        }
        if body.members["token"] == nil, body.members["pushToken"] == nil { return fcm }
        guard try body.string("token", or: "pushToken", maxLength: 512) == fcm else {
            throw APIError.badRequest("fcmToken and token differ: give one of them")
        }
        return fcm
    }

    /// Runs a write in a transaction; the database's refusals (bad JSON shape, payload too large) reach the caller
    /// as 400 through `JSONErrorMiddleware`.
    private func writing(_ body: @escaping @Sendable (PostgresConnection) async throws -> String?) async throws -> String? {
        try await database.withTransaction(body)
    }

    private static func one(_ connection: PostgresConnection, _ query: PostgresQuery, logger: Logger) async throws -> String? {
        var result: String?
        for try await text in try await connection.query(query, logger: logger).decode(String.self) { result = text }
        return result
    }

    static func date(_ body: JSONBody, _ name: String) throws -> Date? {
        guard let value = body.members[name], value != .null else { return nil }
        return try parseDate(value, name)
    }

    /// Epoch seconds (number or numeric string) or ISO 8601, between 1970 and 9999.
    static func parseDate(_ value: JSONValue, _ name: String) throws -> Date {
        let seconds: Double?
        switch value {
        case .integer(let integer): seconds = Double(integer)
        case .number(let number): seconds = number
        case .string(let text): seconds = Double(text) ?? ISO8601DateFormatter().date(from: text)?.timeIntervalSince1970
        default: seconds = nil
        }
        guard let seconds, seconds.isFinite, (0...253_402_300_799).contains(seconds) else {
            throw APIError.badRequest("\(name) must be epoch seconds or an ISO 8601 date between 1970 and 9999")
        }
        return Date(timeIntervalSince1970: seconds)
    }

    private func rawJSON(_ status: HTTPResponse.Status, _ text: String) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }
}
