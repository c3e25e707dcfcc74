import Foundation
import Hummingbird
import LiveRelayCore
import LiveRelayStore

/// The generic Live Activity API (admin): register a per-activity token, list, read, update, end, rotate the token.
/// It writes `activity_registration` through the store like any SQL writer; the triggers deliver.
struct LiveActivityRoutes: Sendable {
    let store: RelayStore
    let defaultBundleID: String?

    /// Registers the routes on an admin-only group.
    func register(on router: RouterGroup<BasicRequestContext>) {
        router.post("v1/live-activities") { request, _ in try await create(request) }
        router.get("v1/live-activities") { request, _ in
            try encodedResponse(.ok, try await store.activities(try Self.filter(request.uri.queryParameters)))
        }
        router.get("v1/live-activities/:id") { _, context in
            try encodedResponse(.ok, try await store.activity(.id(try Self.id(context))))
        }
        router.patch("v1/live-activities/:id") { request, context in
            let body = try await request.decode(as: UpdateLiveActivityBody.self)
            let (activity, effect) = try await store.updateActivity(.id(try Self.id(context)), body.update)
            return try encodedResponse(.ok, UpdateAnswer(record: activity, push: effect))
        }
        router.delete("v1/live-activities/:id") { request, context in
            try encodedResponse(.ok, try await store.endActivity(
                .id(try Self.id(context)), dismissalDate: try await Self.dismissalDate(request)))
        }
        router.put("v1/live-activities/:id/token") { request, context in
            let body = try await request.decode(as: RotateTokenBody.self)
            return try encodedResponse(.ok, try await store.rotateToken(try Self.id(context), to: body.token))
        }
    }

    static func id(_ context: BasicRequestContext) throws -> UUID {
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else {
            throw APIError.badRequest("id must be a UUID")
        }
        return id
    }

    func create(_ request: Request) async throws -> Response {
        let body = try await request.decode(as: CreateLiveActivityBody.self)
        // An Android app is named by its package (bundleId too); FCM needs none, so it may be left out.
        guard let bundle = body.bundleID ?? defaultBundleID ?? (body.platform == .android ? "android" : nil) else {
            throw APIError.badRequest("bundleId is required (the relay has no APNS_DEFAULT_BUNDLE_ID)")
        }
        var activity = NewLiveActivity(
            platform: body.platform, token: body.token, bundleID: bundle, environment: body.environment,
            activityType: body.activityType, attributes: body.attributes, contentState: body.contentState,
            externalID: body.externalID, userID: body.userID, deviceUUID: body.deviceUUID)
        activity.frequentUpdates = body.frequentUpdates
        let created = try await store.createActivity(activity)
        return try encodedResponse(.created, created)
    }

    /// `?status=&platform=&externalId=&userId=&deviceUUID=&limit=&offset=`
    static func filter(_ parameters: Parameters) throws -> LiveActivityFilter {
        var device: UUID?
        if let text = parameters.get("deviceUUID") {
            guard let uuid = UUID(uuidString: text) else { throw APIError.badRequest("deviceUUID must be a UUID") }
            device = uuid
        }
        return LiveActivityFilter(
            status: try parameters.choice("status", as: ActivityStatus.self),
            platform: try parameters.choice("platform", as: Platform.self),
            externalID: try parameters.text("externalId"), userID: try parameters.text("userId"), deviceUUID: device,
            limit: try parameters.wholeNumber("limit", default: 100, range: 1...1000),
            offset: try parameters.wholeNumber("offset", default: 0, range: 0...Int(Int32.max)))
    }

    /// `?dismissalDate=` or a body `{dismissalDate}` (epoch seconds or ISO 8601).
    static func dismissalDate(_ request: Request) async throws -> Date? {
        if let text = request.uri.queryParameters.get("dismissalDate"), !text.isEmpty {
            return try BodyFields.date(.string(text), "dismissalDate")
        }
        let buffer = try await request.body.collect(upTo: RequestLimits.maximumBodyBytes)
        guard buffer.readableBytes > 0 else { return nil }
        do {
            return try JSONDecoder().decode(EndLiveActivityBody.self, from: Data(buffer: buffer)).dismissalDate
        } catch is DecodingError {
            return nil
        }
    }
}
