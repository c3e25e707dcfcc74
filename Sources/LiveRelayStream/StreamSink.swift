/// Where the hub hands one subscriber's items (the HTTP routes' `StreamSubscriber`).
public protocol StreamSink: Sendable {
    /// Hands one item over; false when the subscriber cannot keep up (the hub then drops it, and the client resumes
    /// with `Last-Event-ID`).
    func send(_ item: BroadcastHub.Item) -> Bool
    /// The subscription ended: unsubscribed, dropped, or (`stopping`) the relay is shutting down.
    func finish(stopping: Bool)
}

