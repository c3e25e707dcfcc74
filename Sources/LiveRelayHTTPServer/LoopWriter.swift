import NIOConcurrencyHelpers
import NIOCore
import NIOHTTPTypes

/// Writes to detached connections from any thread, coalesced per event loop: what is queued while a hop to the loop
/// is pending goes with it, and each connection is flushed once per hop.
///
/// Handing 10,000 stream events to their connections one `writeAndFlush` each cost a closure, a lock and a wake-up
/// of the loop per event (the wake-ups alone were a visible share of B3's profile). Per connection the order of
/// what is queued is kept: one loop serves a connection, and its queue is drained in order.
final class LoopWriter: Sendable {
    enum Action: Sendable {
        case write(HTTPResponsePart)
        /// Bytes already framed as the response's body needs them (a chunk of a chunked body), written below the
        /// HTTP encoder: no pass through the codecs and one buffer per chunk instead of three.
        case framed(ByteBuffer)
        /// Ends the response and closes the connection once all of it is written.
        case endAndClose
    }

    private struct Queue {
        var actions: [(DetachedConnection, Action)] = []
        var scheduled = false
    }

    private let loop: any EventLoop
    private let queue = NIOLockedValueBox(Queue())

    private init(loop: any EventLoop) {
        self.loop = loop
    }

    private static let writers = NIOLockedValueBox([ObjectIdentifier: LoopWriter]())

    /// The writer of `loop` (one per event loop, for the life of the process).
    static func of(_ loop: any EventLoop) -> LoopWriter {
        writers.withLockedValue { writers in
            if let writer = writers[ObjectIdentifier(loop)] { return writer }
            let writer = LoopWriter(loop: loop)
            writers[ObjectIdentifier(loop)] = writer
            return writer
        }
    }

    func enqueue(_ connection: DetachedConnection, _ actions: [Action]) {
        let schedule = queue.withLockedValue { queue -> Bool in
            for action in actions { queue.actions.append((connection, action)) }
            guard !queue.scheduled else { return false }
            queue.scheduled = true
            return true
        }
        if schedule { loop.execute { self.drain() } }
    }

    private func drain() {
        let actions = queue.withLockedValue { queue -> [(DetachedConnection, Action)] in
            let actions = queue.actions
            queue.actions = []
            queue.scheduled = false
            return actions
        }
        var written: [ObjectIdentifier: DetachedConnection] = [:]
        for (connection, action) in actions {
            let channel = connection.channel
            switch action {
            case .write(let part):
                channel.write(part, promise: nil)
                written[ObjectIdentifier(connection)] = connection
            case .framed(let bytes):
                connection.writeBelowEncoder(bytes)
                written[ObjectIdentifier(connection)] = connection
            case .endAndClose:
                channel.writeAndFlush(HTTPResponsePart.end(nil)).whenComplete { _ in channel.close(promise: nil) }
                written[ObjectIdentifier(connection)] = nil
            }
        }
        for connection in written.values { connection.flushOnLoop() }
    }
}
