import Foundation
import LiveRelayPostgres
import PostgresNIO

extension BroadcastHub {
    /// The events a resuming client missed, at most a page of them.
    public struct HistoryPage: Sendable {
        public var events: [BroadcastEvent]
        /// False when more events follow the page: the client resumes again from its last event, or from
        /// `scannedThrough` when that is further.
        public var isComplete: Bool
        /// Set when the log cannot give everything the client missed: it should read the current state again.
        public var resync: Resync?
        /// The log was read up to this sequence (a page that ends short of the hub's position because the read went
        /// as far as one read may, on a stream whose events are sparse in the log): where the client resumes.
        public var scannedThrough: Int64? = nil
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
    /// `limit` of them, so that a client far behind costs one bounded read and one bounded answer at a time. The read
    /// also goes over at most `scanLimit` of the log's sequences: a stream with few events among many (one device's,
    /// a day behind) would otherwise have the database walk the whole day's log for them, once per reconnect.
    public func history(after sequence: Int64, through: Int64, channels: [String], limit: Int,
                        scanLimit: Int64 = 100_000) async throws -> HistoryPage {
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
            // What was pruned is not read: its index entries are dead until vacuumed, and a row the prune left below
            // its horizon (a transaction that began after a pruned one and took a lower sequence) is among the events
            // the resync says were not sent. From there, one read's worth of sequences.
            let from = max(sequence, pruned)
            let upTo = through - from > scanLimit ? from + scanLimit : through
            var events: [BroadcastEvent] = []
            for try await (seq, rowChannels, event, data) in try await connection.query("""
                SELECT seq, channels, event, data::text FROM broadcast_log
                WHERE seq > \(from) AND seq <= \(upTo) AND (\(everything) OR channels && \(channels)::text[])
                ORDER BY seq LIMIT \(limit + 1)
                """, logger: logger).decode((Int64, [String], String, String).self) {
                events.append(BroadcastEvent(sequence: seq, channels: rowChannels, name: event, data: data))
            }
            if events.count > limit {
                events.removeLast()
                return HistoryPage(events: events, isComplete: false, resync: resync)
            }
            return HistoryPage(events: events, isComplete: upTo == through, resync: resync,
                               scannedThrough: upTo == through ? nil : upTo)
        }
    }
}
