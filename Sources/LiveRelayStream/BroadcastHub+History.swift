import Foundation
import LiveRelayPostgres
import PostgresNIO

extension BroadcastHub {
    /// The events a resuming client missed, at most a page of them.
    public struct HistoryPage: Sendable {
        public var events: [BroadcastEvent]
        /// False when more events follow the page: the client resumes again from its last event.
        public var isComplete: Bool
        /// Set when the log cannot give everything the client missed: it should read the current state again.
        public var resync: Resync?
    }

    /// Why a resuming client cannot be given everything it missed.
    public enum Resync: Sendable, Equatable {
        /// Events after its id were pruned (older than the retention), up to this sequence.
        case pruned(through: Int64)
        /// Its id is above every sequence the log has handed out (this one): the log was reset (a new database) since
        /// it read that id.
        case ahead(of: Int64)
    }

    /// Events after `sequence` up to `through`, on any of `channels`, from the log (for `Last-Event-ID`): the first
    /// `limit` of them, so that a client far behind costs one bounded read and one bounded answer at a time.
    public func history(after sequence: Int64, through: Int64, channels: [String],
                        limit: Int) async throws -> HistoryPage {
        // At the hub's position (a client reconnecting as it dropped): nothing missed, and nothing pruned after it (the
        // hub read every pruned event long before), so the database is not asked.
        guard sequence != through else { return HistoryPage(events: [], isComplete: true) }
        let everything = channels.contains(Self.everyChannel)
        return try await connector.withConnection(logger: logger) { connection in
            // The log's own head, not the hub's position: another relay's hub may be a read ahead of this one's.
            var pruned: Int64 = 0, head: Int64 = 0
            for try await (prunedThrough, logHead) in try await connection.query(
                "SELECT liverelay_broadcast_log_pruned_through(), liverelay_broadcast_log_head()", logger: logger
            ).decode((Int64, Int64).self) {
                (pruned, head) = (prunedThrough, logHead)
            }
            guard sequence <= head else { return HistoryPage(events: [], isComplete: true, resync: .ahead(of: head)) }
            let resync = pruned > max(sequence, 0) ? Resync.pruned(through: pruned) : nil
            guard through > sequence else { return HistoryPage(events: [], isComplete: true, resync: resync) }
            var events: [BroadcastEvent] = []
            for try await (seq, rowChannels, event, data) in try await connection.query("""
                SELECT seq, channels, event, data::text FROM broadcast_log
                WHERE seq > \(sequence) AND seq <= \(through) AND (\(everything) OR channels && \(channels)::text[])
                ORDER BY seq LIMIT \(limit + 1)
                """, logger: logger).decode((Int64, [String], String, String).self) {
                events.append(BroadcastEvent(sequence: seq, channels: rowChannels, name: event, data: data))
            }
            let isComplete = events.count <= limit
            if !isComplete { events.removeLast() }
            return HistoryPage(events: events, isComplete: isComplete, resync: resync)
        }
    }
}
