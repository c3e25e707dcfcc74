import Foundation
import Hummingbird
import LiveRelayCore
import LiveRelayStore

/// `POST/GET /v1/webhooks`, `PATCH/DELETE /v1/webhooks/{id}` (admin): endpoints that receive lifecycle events (README
/// "Activity lifecycle").
struct WebhookRoutes: Sendable {
    let store: RelayStore
    let urlGuard: any WebhookURLCheck

    func register(on admin: RouterGroup<BasicRequestContext>) {
        admin.post("v1/webhooks") { request, _ in
            let body = try await request.decode(as: CreateWebhookBody.self)
            if let refusal = WebhookURLShape.refusal(of: body.url) { throw APIError.badRequest(refusal) }
            if let refusal = await urlGuard.refusal(of: body.url) { throw APIError.badRequest(refusal) }
            let created = try await store.createWebhook(url: body.url, events: body.events, secret: body.secret)
            return try encodedResponse(.created, created)
        }
        admin.get("v1/webhooks") { _, _ in try encodedResponse(.ok, try await store.webhooks()) }
        admin.patch("v1/webhooks/:id") { request, context in
            let id = try Self.endpointID(context)
            let body = try await request.decode(as: UpdateWebhookBody.self)
            return try encodedResponse(
                .ok, try await store.updateWebhook(id, enabled: body.enabled, events: body.events))
        }
        admin.delete("v1/webhooks/:id") { _, context in
            try await store.deleteWebhook(try Self.endpointID(context))
            return Response(status: .noContent)
        }
    }

    static func endpointID(_ context: BasicRequestContext) throws -> UUID {
        guard let id = context.parameters.get("id").flatMap(UUID.init(uuidString:)) else {
            throw APIError.badRequest("id must be a webhook endpoint's UUID")
        }
        return id
    }
}

/// `PATCH /v1/webhooks/{id} {enabled?, events?}`: at least one.
struct UpdateWebhookBody: Decodable {
    var enabled: Bool?
    var events: [LifecycleEvent]?

    init(from decoder: any Decoder) throws {
        let fields = try BodyFields(decoder)
        enabled = try fields.optionalBool("enabled")
        events = try CreateWebhookBody.events(fields, leftOut: "to keep them")
        guard enabled != nil || events != nil else {
            throw APIError.badRequest("give enabled (false pauses the endpoint, true resumes it) or events")
        }
    }
}

/// `POST /v1/webhooks {url, events?, secret?}`.
struct CreateWebhookBody: Decodable {
    var url: String
    var events: [LifecycleEvent]
    var secret: String?

    init(from decoder: any Decoder) throws {
        let fields = try BodyFields(decoder)
        url = try fields.string("url", maxLength: 2048)
        secret = try fields.optionalString("secret", maxLength: 256)
        if let secret, secret.count < 16 {
            throw APIError.badRequest("secret must be at least 16 characters (leave it out to have one generated)")
        }
        events = try Self.events(fields, leftOut: "for all") ?? []
    }

    /// `events`: nil when left out (which the refusal of an empty list says means `leftOut`); a list of lifecycle
    /// event types, not empty.
    static func events(_ fields: BodyFields, leftOut: String) throws -> [LifecycleEvent]? {
        switch try fields.value("events") {
        case nil: return nil
        case .array(let items)?:
            let names = LifecycleEvent.allCases.map(\.rawValue).joined(separator: ", ")
            let events = try items.map { item in
                guard case .string(let text) = item, let event = LifecycleEvent(rawValue: text) else {
                    throw APIError.badRequest("events must be a list of: \(names)")
                }
                return event
            }
            if events.isEmpty { throw APIError.badRequest("events must not be empty (leave it out \(leftOut))") }
            return events
        default: throw APIError.badRequest("events must be a list of event types")
        }
    }
}
