import Foundation

/// One lifecycle event to POST to one endpoint.
public struct WebhookRequest: Sendable, Hashable {
    public var url: String
    public var secret: String
    public var eventID: UUID
    /// The exact bytes sent and signed.
    public var body: String

    public init(url: String, secret: String, eventID: UUID, body: String) {
        self.url = url
        self.secret = secret
        self.eventID = eventID
        self.body = body
    }
}

/// What came of one webhook request.
public struct WebhookResult: Sendable, Hashable {
    /// A 2xx answer within the deadline.
    public var delivered: Bool
    public var httpStatus: Int?
    /// Why it was not delivered (no answer, refused address, a non-2xx status).
    public var error: String?
    /// The receiver's `Retry-After`, in seconds, honoured as a lower bound.
    public var retryAfterSeconds: Double?

    public init(delivered: Bool, httpStatus: Int? = nil, error: String? = nil, retryAfterSeconds: Double? = nil) {
        self.delivered = delivered
        self.httpStatus = httpStatus
        self.error = error
        self.retryAfterSeconds = retryAfterSeconds
    }
}

/// Sends webhook requests (the third transport of the delivery engine; see docs/lifecycle.md).
public protocol WebhookSender: Sendable {
    /// Never throws: a request that could not be made comes back undelivered with an `error`.
    func send(_ request: WebhookRequest) async -> WebhookResult
    /// Checks, once per batch and endpoint, that the URL may be reached; nil when it may, else why not.
    func refusal(of url: String) async -> String?
    func shutdown() async
}
