import Foundation
import LiveRelayCore
import Synchronization

/// The address checks of one claim's endpoints (`WebhookSender.refusal(of:)`): each URL's check is made once, by
/// the first lane that needs it, and the endpoint's other lanes wait for that one. So a name that takes long to
/// resolve holds only its own endpoint's lanes, never the claim or another endpoint's events.
final class EndpointChecks: Sendable {
    private let checks = Mutex<[String: Task<String?, Never>]>([:])
    private let sender: any WebhookSender

    init(sender: any WebhookSender) {
        self.sender = sender
    }

    /// Why the URL may not be called now, or nil.
    func refusal(of url: String) async -> String? {
        let check = checks.withLock { checks in
            if let check = checks[url] { return check }
            let sender = sender
            let check = Task { await sender.refusal(of: url) }
            checks[url] = check
            return check
        }
        return await check.value
    }
}
