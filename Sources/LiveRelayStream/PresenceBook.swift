import Foundation

/// What makes an activity foreground, as one open stream says it: a device (the stream is authorised by that
/// device's token and follows `device:<uuid>`) or a session (authorised by its pairing secret, following
/// `session:<id>`).
public enum PresenceKey: Sendable, Hashable {
    case device(UUID)
    case session(secretHash: String, sessionID: String)
}

/// The streams of this relay that count for presence, and what of them the database has yet to learn. A value type
/// with no I/O: `PresenceTracker` performs the writes it asks for and reports back.
///
/// Every write carries everything pending (streams entered and left since the last one) and is a heartbeat too, so
/// streams opened together cost one statement. A stream that closes before its entry was written costs nothing. When
/// the database has lost this relay's rows (another relay swept it after a pause longer than the window) or a write
/// failed, the next write replaces everything the relay holds.
struct PresenceBook {
    /// One statement to run: `entered` streams with their keys, `left` streams, and whether `entered` is everything
    /// this relay holds (its earlier rows are replaced).
    struct Write: Equatable {
        struct Entry: Equatable {
            var stream: Int64
            var key: PresenceKey
        }

        var entered: [Entry]
        var left: [Int64]
        var replaceAll: Bool
        /// The streams whose `enter` waits for this write.
        var resumes: [Int64]
    }

    private(set) var streams: [Int64: [PresenceKey]] = [:]
    private var nextID: Int64 = 1
    /// Entered, not yet in a write (in order).
    private var unwrittenEntries: [Int64] = []
    /// Left after their entry went into a write.
    private var unwrittenLeaves: [Int64] = []
    /// The next write must replace everything (first write, rows lost, or a write that failed).
    private var replaceAll = true
    /// A write is running: the next waits for its answer.
    private(set) var writing = false
    /// The entries the running write carries.
    private var inFlight: Set<Int64> = []

    /// Whether the database has yet to learn of this stream's entry (its `enter` waits for that).
    func isUnwritten(_ id: Int64) -> Bool {
        streams[id] != nil && (inFlight.contains(id) || unwrittenEntries.contains(id))
    }

    /// Registers an open stream's keys; returns its id.
    mutating func enter(_ keys: [PresenceKey]) -> Int64 {
        let id = nextID
        nextID += 1
        streams[id] = keys
        unwrittenEntries.append(id)
        return id
    }

    /// A stream closed: its rows go in the next write (none, if its entry was never written).
    mutating func leave(_ id: Int64) {
        guard streams.removeValue(forKey: id) != nil else { return }
        if let index = unwrittenEntries.firstIndex(of: id) {
            unwrittenEntries.remove(at: index)
        } else {
            unwrittenLeaves.append(id)
        }
    }

    /// Whether a write is wanted now (something changed), besides the periodic heartbeat.
    var hasChanges: Bool { !unwrittenEntries.isEmpty || !unwrittenLeaves.isEmpty || (replaceAll && !streams.isEmpty) }

    /// The write to run now, or nil while one runs. A heartbeat is a write with nothing in it.
    mutating func startWrite() -> Write? {
        guard !writing else { return nil }
        writing = true
        let write: Write
        if replaceAll {
            let all = streams.keys.sorted()
            write = Write(entered: entries(all), left: [], replaceAll: true, resumes: unwrittenEntries)
        } else {
            write = Write(entered: entries(unwrittenEntries), left: unwrittenLeaves, replaceAll: false,
                          resumes: unwrittenEntries)
        }
        inFlight = Set(write.resumes)
        unwrittenEntries = []
        unwrittenLeaves = []
        replaceAll = false
        return write
    }

    private func entries(_ ids: [Int64]) -> [Write.Entry] {
        ids.flatMap { id in streams[id]!.map { Write.Entry(stream: id, key: $0) } }
    }

    /// The write succeeded; `created`: the database had no row for this relay (it had been swept), so what it held
    /// is gone and the next write replaces everything.
    mutating func writeSucceeded(created: Bool, write: Write) {
        writing = false
        inFlight = []
        if created && !write.replaceAll { replaceAll = true }
    }

    /// The write failed (the connection was lost): the next one replaces everything.
    mutating func writeFailed() {
        writing = false
        inFlight = []
        replaceAll = true
    }
}
