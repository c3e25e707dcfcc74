import Foundation
import LiveRelayPostgres
import PostgresNIO

extension BroadcastHub {
    /// Reads what follows the cursor and delivers it in order.
    func poll(on connection: PostgresConnection) async throws -> (delivered: Int, heldBack: Bool) {
        let (cursor, read) = state.withLock { state in
            state.readsBegun += 1
            return (state.order.cursor, state.readsBegun)
        }
        defer {
            let caughtUp = state.withLock { state in
                var done: [Doorbell] = []
                state.catchUps.removeAll { waiter in
                    guard waiter.read <= read else { return false }
                    done.append(waiter.bell)
                    return true
                }
                return done
            }
            for bell in caughtUp { bell.ring() }
        }
        // Passed on a chunk at a time as the rows arrive, not after the whole read: PostgreSQL reads and sends the
        // rest on the other core while the streams are written to, and the first events go out after the first
        // chunk's rows rather than the read's last. The chunks are taken in order, so they pass what one take of the
        // whole read would (a gap that holds a chunk back holds every later one back too).
        var rows: [BroadcastEvent] = []
        rows.reserveCapacity(Self.deliveryChunk)
        var xmin: Int64 = 0
        var xmax: Int64 = 0
        var passed = 0
        var heldBack = false
        for try await (snapshotXmin, snapshotXmax, seq, channels, event, data) in try await connection.execute(
            LogReadStatement(cursor: cursor, limit: Int64(Self.readLimit)), logger: logger) {
            xmin = snapshotXmin
            xmax = snapshotXmax
            if let seq, let channels, let event, let data {
                rows.append(BroadcastEvent(sequence: seq, channels: channels, name: event, data: data))
            }
            if rows.count == Self.deliveryChunk && !heldBack {
                (passed, heldBack) = deliver(rows, xmin: xmin, xmax: xmax, after: passed)
                rows.removeAll(keepingCapacity: true)
            }
        }
        if !heldBack {
            (passed, heldBack) = deliver(rows, xmin: xmin, xmax: xmax, after: passed)
        }
        return (passed, heldBack)
    }

    /// Rows read from the log a hub passes on at a time.
    static let deliveryChunk = 100

    /// Passes `rows` (the next of one read, in order) through the gap tracker to their channels' subscribers;
    /// returns how many of the read's rows have been passed on, `passedBefore` of them earlier, and whether a gap
    /// held the rest back.
    private func deliver(_ rows: [BroadcastEvent], xmin: Int64, xmax: Int64, after passedBefore: Int)
        -> (passed: Int, heldBack: Bool) {
        var deliveries: [(any StreamSink, UUID, BroadcastEvent)] = []
        let (passed, heldBack) = state.withLock { state -> (Int, Bool) in
            let (passed, heldBack) = state.order.accept(rows, xmin: xmin, xmax: xmax)
            for row in passed {
                var readers = Set<UUID>()
                for channel in row.channels { readers.formUnion(state.byChannel[channel] ?? []) }
                readers.formUnion(state.byChannel[Self.everyChannel] ?? [])
                for id in readers {
                    if let subscriber = state.subscribers[id] { deliveries.append((subscriber.sink, id, row)) }
                }
            }
            return (passed.count, heldBack)
        }
        var slow = Set<UUID>()
        for (sink, id, event) in deliveries where !slow.contains(id) {
            if !sink.send(.event(event)) {
                // A client that fell behind is disconnected; it resumes with Last-Event-ID.
                slow.insert(id)
            }
        }
        for id in slow { unsubscribe(id) }
        return (passedBefore + passed, heldBack)
    }
}
