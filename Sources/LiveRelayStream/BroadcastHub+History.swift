import Foundation
import LiveRelayPostgres
import PostgresNIO

extension BroadcastHub {
    /// Events after `sequence` up to `through`, on any of `channels`, from the log (for `Last-Event-ID`).
    public func history(after sequence: Int64, through: Int64, channels: [String]) async throws -> [BroadcastEvent] {
        guard through > sequence else { return [] }
        let everything = channels.contains(Self.everyChannel)
        return try await connector.withConnection(logger: logger) { connection in
            var events: [BroadcastEvent] = []
            for try await (seq, rowChannels, event, data) in try await connection.query("""
                SELECT seq, channels, event, data::text FROM broadcast_log
                WHERE seq > \(sequence) AND seq <= \(through) AND (\(everything) OR channels && \(channels)::text[])
                ORDER BY seq
                """, logger: logger).decode((Int64, [String], String, String).self) {
                events.append(BroadcastEvent(sequence: seq, channels: rowChannels, name: event, data: data))
            }
            return events
        }
    }
}
