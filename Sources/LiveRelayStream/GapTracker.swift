/// The order in which the hub passes the broadcast log on, as a value: no database, no lock, no clock.
///
/// Sequences are taken when a row is inserted, so a lower one can commit after a higher one. Reading the log returns
/// the rows after the cursor together with the reading snapshot's `xmin` (every transaction older than it has ended)
/// and `xmax` (every transaction from it on started after the snapshot). A missing sequence (a gap) holds later rows
/// back until its row is read, or until every transaction that was running when the gap was first seen has ended:
/// then nothing can still insert it (it was rolled back, or pruned with the log's retention) and it is passed.
struct GapTracker: Sendable {
    /// The last sequence passed on (delivered, or skipped as never coming); -1 until the log's position is known.
    private(set) var cursor: Int64
    /// A missing sequence → the snapshot `xmax` when it was first seen missing.
    private(set) var gaps: [Int64: Int64] = [:]

    init(cursor: Int64 = -1) {
        self.cursor = cursor
    }

    var isStarted: Bool { cursor >= 0 }

    /// Sets the position once, from the log's highest sequence when the hub starts.
    mutating func start(at sequence: Int64) {
        if cursor < 0 { cursor = sequence }
    }

    /// Takes one read of the log: the rows after the cursor in sequence order, and the reading snapshot's bounds.
    /// Returns the rows to pass on, in order, and whether a gap held the rest back (the hub reads again soon).
    mutating func accept(
        _ rows: [BroadcastEvent], xmin: Int64, xmax: Int64
    ) -> (passed: [BroadcastEvent], heldBack: Bool) {
        var passed: [BroadcastEvent] = []
        var expected = cursor + 1
        for row in rows where row.sequence >= expected {
            while expected < row.sequence {
                let seenAt = gaps[expected] ?? xmax
                guard xmin >= seenAt else {
                    gaps[expected] = seenAt
                    return (passed, true)
                }
                gaps[expected] = nil
                cursor = expected
                expected += 1
            }
            gaps[row.sequence] = nil
            cursor = row.sequence
            expected = row.sequence + 1
            passed.append(row)
        }
        return (passed, false)
    }
}
