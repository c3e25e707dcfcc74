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
        var rows: [BroadcastEvent] = []
        var xmin: Int64 = 0
        var xmax: Int64 = 0
        for try await (snapshotXmin, snapshotXmax, seq, channels, event, data) in try await connection.execute(
            LogReadStatement(cursor: cursor, limit: Int64(Self.readLimit)), logger: logger) {
            xmin = snapshotXmin
            xmax = snapshotXmax
            if let seq, let channels, let event, let data {
                rows.append(BroadcastEvent(sequence: seq, channels: channels, name: event, data: data))
            }
        }
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
        return (passed, heldBack)
    }
}
