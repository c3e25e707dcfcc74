/// Decides whether a webhook URL may be registered and called. The HTTP routes ask it without knowing how it
/// resolves names (the webhook transport's `WebhookURLGuard` does, with the operator's choice about private
/// networks).
public protocol WebhookURLCheck: Sendable {
    /// Why the URL is refused, in a sentence; nil when it may be called.
    func refusal(of url: String) async -> String?
}
