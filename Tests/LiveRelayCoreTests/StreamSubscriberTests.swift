import HTTPTypes
@testable import LiveRelayStream
import NIOCore
import NIOEmbedded
import NIOHTTPTypes
import Testing
@testable import LiveRelayHTTP
@testable import LiveRelayHTTPServer

/// An SSE subscription on its own: what waited while the response was prepared, then straight to the connection,
/// in order; a client that cannot keep up is refused; the relay's stop says goodbye. No database, no sockets.
@Suite("Stream subscriber")
struct StreamSubscriberTests {
    static func event(_ sequence: Int64) -> BroadcastHub.Item {
        .event(BroadcastEvent(sequence: sequence, channels: ["session:s"], name: "activity-update", data: "{}"))
    }

    /// What the connection was given: the head's status, then each body chunk's text, then "end".
    static func written(_ channel: EmbeddedChannel) throws -> [String] {
        channel.embeddedEventLoop.run()  // the writes queued for the connection's loop
        var parts: [String] = []
        while let part = try channel.readOutbound(as: HTTPResponsePart.self) {
            switch part {
            case .head(let head): parts.append("head \(head.status.code)")
            case .body(let buffer): parts.append(String(buffer: buffer))
            case .end: parts.append("end")
            }
        }
        return parts
    }

    static func attached(_ subscriber: StreamSubscriber) throws -> (EmbeddedChannel, DetachedConnection) {
        let channel = EmbeddedChannel()
        try channel.connect(to: try SocketAddress(ipAddress: "127.0.0.1", port: 1)).wait()
        let connection = DetachedConnection(channel: channel)
        connection.setHead(HTTPResponse(status: .ok))
        connection.detach()
        subscriber.attach(connection, prefix: [SSEFrame.connected])
        return (channel, connection)
    }

    @Test("items that waited follow the prefix in order, later ones follow them, the relay's stop says goodbye")
    func attachInOrder() throws {
        let subscriber = StreamSubscriber(limit: 10)
        #expect(subscriber.send(Self.event(1)) && subscriber.send(.heartbeat))
        let (channel, _) = try Self.attached(subscriber)
        #expect(subscriber.send(Self.event(2)))
        subscriber.finish(stopping: true)
        #expect(!subscriber.send(Self.event(3)), "an ended subscription took an item")
        #expect(try Self.written(channel) == [
            "head 200", "retry: 2000\n: connected\n\n",
            "id: 1\nevent: activity-update\ndata: {}\n\n", ": heartbeat\n\n",
            "id: 2\nevent: activity-update\ndata: {}\n\n",
            ": the relay is shutting down; reconnect with Last-Event-ID\n\n", "end",
        ])
        #expect(!channel.isActive, "the connection stayed open after its stream ended")
    }

    @Test("a client that leaves or is dropped gets no goodbye")
    func finishWithoutGoodbye() throws {
        let subscriber = StreamSubscriber(limit: 10)
        let (channel, _) = try Self.attached(subscriber)
        subscriber.finish(stopping: false)
        #expect(try Self.written(channel) == ["head 200", "retry: 2000\n: connected\n\n", "end"])
    }

    @Test("a subscription ended before its response was ready ends the response at once")
    func endedBeforeAttach() throws {
        let subscriber = StreamSubscriber(limit: 10)
        #expect(subscriber.send(Self.event(1)))
        subscriber.finish(stopping: true)
        let (channel, _) = try Self.attached(subscriber)
        #expect(try Self.written(channel) == [
            "head 200", "retry: 2000\n: connected\n\n",
            ": the relay is shutting down; reconnect with Last-Event-ID\n\n", "end",
        ])
    }

    @Test("more items waiting than the limit: the subscriber is refused (the hub drops it)")
    func limit() {
        let subscriber = StreamSubscriber(limit: 2)
        #expect(subscriber.send(Self.event(1)) && subscriber.send(Self.event(2)))
        #expect(!subscriber.send(Self.event(3)))
    }

    @Test("forwarded: what waited, then what comes, until finished")
    func forward() async {
        let subscriber = StreamSubscriber(limit: 10)
        #expect(subscriber.send(Self.event(1)))
        let stream = subscriber.forward()
        #expect(subscriber.send(Self.event(2)))
        subscriber.finish(stopping: false)
        var sequences: [Int64] = []
        for await item in stream { if case .event(let event) = item { sequences.append(event.sequence) } }
        #expect(sequences == [1, 2])
    }
}
