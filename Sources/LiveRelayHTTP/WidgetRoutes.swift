import Foundation
import Hummingbird
import LiveRelayStore

/// `GET /v1/devices/{uuid}/widget`: what the device's widget shows, for its timeline provider after a WidgetKit
/// reload push. The device's own token or the admin's; another device's token is refused.
struct WidgetRoutes: Sendable {
    let auth: Authenticator
    let store: RelayStore

    func register(on router: Router<BasicRequestContext>) {
        router.get("v1/devices/:uuid/widget") { request, context in
            let caller = auth.caller(for: request)
            guard caller.isAdmin || caller.deviceUUID != nil else { throw APIError.unauthorized(caller) }
            guard let device = context.parameters.get("uuid").flatMap(UUID.init(uuidString:)) else {
                throw APIError.badRequest("uuid must be a device UUID")
            }
            guard caller.isAdmin || caller.deviceUUID == device else {
                throw APIError.forbidden("a device token reads only its own device's widget")
            }
            return try encodedResponse(.ok, try await store.widget(of: device))
        }
    }
}
