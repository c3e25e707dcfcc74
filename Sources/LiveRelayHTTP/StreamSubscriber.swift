import LiveRelayCore
import LiveRelayHTTPServer
import LiveRelayStream
import NIOCore
import Synchronization

/// One SSE client's subscription to the hub.
///
/// The hub's items wait here while the response is prepared (the history read, the head written); then they go
/// straight to the client's connection (`attach`, no task per client: see `StreamingHTTP1Channel`) or to an
/// `AsyncStream` that the response's task reads (`forward`, when the stream is not the connection's first request).
/// Writes to a connection happen under the lock, so they reach it in the order the hub handed them over.
final class StreamSubscriber: StreamSink {
    enum State {
        case buffering([BroadcastHub.Item])
        /// `unwritable`: items handed over in a row while the client's socket buffer was full.
        case attached(DetachedConnection, unwritable: Int)
        case forwarding(AsyncStream<BroadcastHub.Item>.Continuation)
        case ended(stopping: Bool)
    }

    private let state = Mutex(State.buffering([]))
    /// The most items that may wait for a client (in this buffer, or beyond a full socket buffer) before it is
    /// dropped and must resume with `Last-Event-ID`.
    let limit: Int
    /// A client more than this many events behind is disconnected (and resumes).
    static let defaultLimit = 1024

    init(limit: Int) {
        self.limit = limit
    }

    func send(_ item: BroadcastHub.Item) -> Bool {
        state.withLock { state in
            switch state {
            case .buffering(var items):
                guard items.count < limit else { return false }
                items.append(item)
                state = .buffering(items)
                return true
            case .attached(let connection, let unwritable):
                let behind = connection.isWritable ? 0 : unwritable + 1
                guard behind <= limit else { return false }
                state = .attached(connection, unwritable: behind)
                connection.write(SSEFrame.encode(item))
                return true
            case .forwarding(let continuation):
                if case .dropped = continuation.yield(item) { return false }
                return true
            case .ended:
                return false
            }
        }
    }

    func finish(stopping: Bool) {
        state.withLock { state in
            switch state {
            case .buffering:
                state = .ended(stopping: stopping)
            case .attached(let connection, _):
                state = .ended(stopping: stopping)
                connection.finish(last: stopping ? SSEFrame.farewell : nil)
            case .forwarding(let continuation):
                state = .ended(stopping: stopping)
                continuation.finish()
            case .ended:
                break
            }
        }
    }

    /// Writes `prefix` and what waited to the connection, and every later item as it comes.
    func attach(_ connection: DetachedConnection, prefix: [ByteBuffer]) {
        state.withLock { state in
            for buffer in prefix { connection.write(buffer) }
            switch state {
            case .buffering(let items):
                for item in items { connection.write(SSEFrame.encode(item)) }
                state = .attached(connection, unwritable: 0)
            case .ended(let stopping):
                connection.finish(last: stopping ? SSEFrame.farewell : nil)
            case .attached, .forwarding:
                preconditionFailure("a subscription is attached or forwarded once")
            }
        }
    }

    /// An `AsyncStream` of what waited and every later item.
    func forward() -> AsyncStream<BroadcastHub.Item> {
        let (stream, continuation) = AsyncStream.makeStream(
            of: BroadcastHub.Item.self, bufferingPolicy: .bufferingOldest(limit))
        state.withLock { state in
            switch state {
            case .buffering(let items):
                for item in items { continuation.yield(item) }
                state = .forwarding(continuation)
            case .ended:
                continuation.finish()
            case .attached, .forwarding:
                preconditionFailure("a subscription is attached or forwarded once")
            }
        }
        return stream
    }
}

/// The stream's wire format.
enum SSEFrame {
    static let connected = ByteBuffer(string: "retry: 2000\n: connected\n\n")
    static let heartbeat = ByteBuffer(string: ": heartbeat\n\n")
    /// The head of an answer that carries one page of missed events and ends: the client reconnects at once (`retry:
    /// 0`) with the page's last id for the next.
    static let morePages = ByteBuffer(string: "retry: 0\n: more events follow; reconnect with Last-Event-ID\n\n")
    /// The comment a stream ends with when the relay shuts down: the client reconnects (to another instance, or to
    /// this one restarted) with Last-Event-ID and misses nothing.
    static let farewell = ByteBuffer(string: ": the relay is shutting down; reconnect with Last-Event-ID\n\n")

    /// A comment (which EventSource ignores) for a person reading the stream who mistyped a channel's name: following a
    /// name no channel has is allowed (its events come if one is made with it), and otherwise silent.
    static func noChannel(named name: String) -> ByteBuffer {
        ByteBuffer(string: ": no channel is named \(name) yet: its events follow if one is created\n\n")
    }

    /// The event that tells a resuming client that the log cannot give it everything it missed (pruned, being older
    /// than the retention; or the log was reset): it reads the current state again. It has no `id:`, so the client's
    /// last id stays its own.
    static func resync(_ resync: BroadcastHub.Resync, after lastEventID: Int64) -> ByteBuffer {
        var data: [String: JSONValue] = ["last_event_id": .integer(lastEventID)]
        switch resync {
        case .pruned(let through):
            data["reason"] = .string("pruned")
            data["pruned_through"] = .integer(through)
            data["message"] = .string("events after \(lastEventID) up to \(through) are older than the stream keeps "
                                      + "and were not sent: read the current state again")
        case .ahead(let head):
            data["reason"] = .string("ahead")
            data["head"] = .integer(head)
            data["message"] = .string("event \(lastEventID) is ahead of the stream (at \(head)), whose log was reset "
                                      + "since: read the current state again")
        }
        return resyncEvent(data)
    }

    /// The same for a client whose `Last-Event-ID` no event can have: it gets live events from here, and is told
    /// that what came before may be missing.
    static func unreadable(_ lastEventID: String) -> ByteBuffer {
        resyncEvent([
            "reason": .string("unreadable"),
            "message": .string("Last-Event-ID \(lastEventID) is not an event id of this stream (a whole number), so "
                               + "events before this connection may be missing: read the current state again"),
        ])
    }

    /// A `resync` event: no `id:`, so the client's last id stays its own.
    private static func resyncEvent(_ data: [String: JSONValue]) -> ByteBuffer {
        ByteBuffer(string: "event: resync\ndata: \(JSONValue.object(data).compactText)\n\n")
    }

    /// Moves the client's last event id on without an event (EventSource sets it from an `id:` field even when there
    /// is no data to dispatch): where a page of history that read as far as one read may ends.
    static func position(_ sequence: Int64) -> ByteBuffer {
        ByteBuffer(string: "id: \(sequence)\n\n")
    }

    static func encode(_ event: BroadcastEvent) -> ByteBuffer {
        ByteBuffer(string: "id: \(event.sequence)\nevent: \(event.name)\ndata: \(event.data)\n\n")
    }

    static func encode(_ item: BroadcastHub.Item) -> ByteBuffer {
        switch item {
        case .event(let event): encode(event)
        case .heartbeat: heartbeat
        }
    }
}
