/// Where the hub hands one subscriber's items: an `AsyncStream` read by a task, or a connection written directly.
public protocol StreamSink: Sendable {
    /// Hands one item over; false when the subscriber cannot keep up (the hub then drops it, and the client resumes
    /// with `Last-Event-ID`).
    func send(_ item: BroadcastHub.Item) -> Bool
    /// The subscription ended: unsubscribed, dropped, or (`stopping`) the relay is shutting down.
    func finish(stopping: Bool)
}

/// A sink that is an `AsyncStream`'s continuation.
struct AsyncStreamSink: StreamSink {
    let continuation: AsyncStream<BroadcastHub.Item>.Continuation

    func send(_ item: BroadcastHub.Item) -> Bool {
        if case .dropped = continuation.yield(item) { return false }
        return true
    }

    func finish(stopping: Bool) {
        continuation.finish()
    }
}
