/// Which consumers a wake-up rings, and what this relay's `relay_wakeup` row must say, as a value: no connection,
/// no lock, no clock (the caller passes the time). `WakeupListener` performs what it decides: rings doorbells,
/// writes the row, follows the writers that were open when the row said idle.
///
/// Writers only NOTIFY while some relay's row says idle, and the first writer to find it idle marks it busy. So the
/// row must say idle only when no delivery worker is draining (or a writer that read "busy" would be left for the
/// poll), and a wake-up must count its worker busy until that worker reports idle (or another consumer that finds
/// nothing would publish the relay idle in the middle of the woken batch).
struct WakeupGate: Sendable {
    /// A consumer's number, in the order they registered (the listener's doorbells).
    typealias Consumer = Int

    private(set) var consumers = 0
    /// Consumers of one shared queue (delivery workers): a wake-up rings one of them; only they count for the row.
    private(set) var sharing: Set<Consumer> = []
    private(set) var busy: Set<Consumer> = []
    /// What this relay's row says, as far as the relay knows: a writer that notifies has set it to busy.
    private(set) var publishedIdle = false
    /// Busy or idle changed since the row was last written.
    private(set) var stale = false
    /// Outbox rows that writers' notifications named, not yet taken by a worker, and when the first came.
    private var notifiedRows: [Int64] = []
    private var notifiedAt: ContinuousClock.Instant?

    /// The relay reads the write-ahead log for commits (`WALWatcher`): its row says busy whatever its workers do, so
    /// writers never notify it, and their busy and idle no longer need writing.
    private(set) var watchesWAL = false
    /// When the log last showed an outbox commit that rang each worker, until that worker's next follow-up.
    private var walWokeAt: [Consumer: (at: ContinuousClock.Instant, looks: Int)] = [:]
    /// The log showed an outbox commit while every worker was busy: the next worker to finish claims again.
    private var missedWALWake = false

    /// How many times a worker rung for a commit looks again for it (at once, then 2, 6, 18, 54 and 162 ms after its
    /// claims: `WALFollowUp.lateLookDelays`). A writer's backend can be kept off the CPU between its commit's flush
    /// and the moment others see it, for milliseconds, and on a loaded machine for tens of them: with three looks
    /// within 26 ms, a write made while the test suite loaded both cores waited for the poll.
    static let lateLooks = WALFollowUp.lateLookDelays.count

    /// At most this many named rows wait (the names are only a hint: the general claim finds every row).
    static let notifiedRowsKept = 1_000

    mutating func register(sharesWork: Bool) -> Consumer {
        if sharesWork { sharing.insert(consumers) }
        consumers += 1
        return consumers - 1
    }

    /// A wake-up (`notified`: a writer's notification, naming `rows`; else the relay's own re-scan): every consumer
    /// that does not share work, and the first idle worker, which counts as busy after a writer's notification.
    /// A re-scan that saw no due delivery (`due` false) rings no worker: its claim would find nothing.
    mutating func wakeUp(notified: Bool, rows: [Int64] = [], due: Bool = true,
                         at now: ContinuousClock.Instant) -> [Consumer] {
        if notified { publishedIdle = false }
        if !rows.isEmpty, notifiedRows.isEmpty { notifiedAt = now }
        notifiedRows += rows
        if notifiedRows.count > Self.notifiedRowsKept {
            notifiedRows.removeFirst(notifiedRows.count - Self.notifiedRowsKept)
        }
        var ring = (0..<consumers).filter { !sharing.contains($0) }
        guard notified || due else { return ring }
        if let worker = sharing.sorted().first(where: { !busy.contains($0) }) {
            ring.append(worker)
            if notified { busy.insert(worker) }
        }
        return ring
    }

    /// The named rows (at most `limit`; the rest stay for the next worker), and when the first of them was named.
    mutating func takeNotifiedRows(limit: Int) -> (rows: [Int64], since: ContinuousClock.Instant?) {
        let taken = Array(notifiedRows.prefix(limit))
        notifiedRows.removeFirst(taken.count)
        let since = notifiedAt
        if notifiedRows.isEmpty { notifiedAt = nil }
        return (taken, since)
    }

    /// After a worker's batch: the consumers that are not workers look for what writers committed without
    /// notifying. (The other workers were rung when its claim came back full, if it did: `othersThan`.)
    func afterBatch() -> [Consumer] {
        (0..<consumers).filter { !sharing.contains($0) }
    }

    /// A worker's claim came back full (more than one batch of work): the other workers, to claim beside it.
    func othersThan(_ worker: Consumer) -> [Consumer] {
        sharing.sorted().filter { $0 != worker }
    }

    /// A consumer found work. True when the row must be rewritten (it said idle); after a wake-up it already says
    /// busy (the writer that notified marked it).
    mutating func reportBusy(_ consumer: Consumer) -> Bool {
        let changed = busy.insert(consumer).inserted && busy.count == 1 && publishedIdle && !watchesWAL
        if changed { stale = true }
        return changed
    }

    /// A consumer drained everything it saw. True when the row must be rewritten (the relay is idle now).
    mutating func reportIdle(_ consumer: Consumer) -> Bool {
        let changed = (busy.remove(consumer) != nil || !publishedIdle) && busy.isEmpty && !watchesWAL
        if changed { stale = true }
        return changed
    }

    /// The relay starts or stops reading the write-ahead log. True when the row must be rewritten: busy from now on,
    /// or, when the log is lost, what the workers are (idle ones let writers notify again).
    mutating func watchWAL(_ watching: Bool) -> Bool {
        guard watching != watchesWAL else { return false }
        watchesWAL = watching
        walWokeAt = [:]
        missedWALWake = false
        stale = true
        return true
    }

    /// The log showed commits: of outbox rows (`outbox`), which ring the stream and an idle worker, counted busy
    /// until its follow-up says it may wait; of stream events alone, which ring the stream.
    mutating func walCommitted(outbox: Bool, at now: ContinuousClock.Instant) -> [Consumer] {
        let streams = (0..<consumers).filter { !sharing.contains($0) }
        guard outbox else { return streams }
        let ring = wakeUp(notified: true, at: now)
        if let worker = ring.first(where: sharing.contains) {
            walWokeAt[worker] = (now, 0)
        } else {
            missedWALWake = true
        }
        return ring
    }

    /// The follow-up of `worker`'s batch (`claimed`: whether its claim found rows); nil while the log is not read.
    mutating func walFollowUp(_ worker: Consumer, claimed: Bool, at now: ContinuousClock.Instant,
                              window: Duration = .milliseconds(500)) -> WALFollowUp? {
        guard watchesWAL else { return nil }
        if missedWALWake {
            missedWALWake = false
            return .now
        }
        if let woken = walWokeAt.removeValue(forKey: worker), !claimed, woken.looks < Self.lateLooks,
           now - woken.at < window {
            walWokeAt[worker] = (woken.at, woken.looks + 1)
            return .soon(woken.looks)
        }
        busy.remove(worker)
        return .wait
    }

    /// Whether the row must be rewritten; the listener is about to.
    mutating func takeStale() -> Bool {
        defer { stale = false }
        return stale
    }

    /// The row is about to be written: what it says (idle when no worker is busy). Set before the write, so that a
    /// writer's notification that arrives meanwhile (marking the row busy) wins.
    mutating func publish() -> Bool {
        publishedIdle = busy.isEmpty && !watchesWAL
        return publishedIdle
    }

    /// What the row says as far as the relay knows, before `publish()`: the listener writes "idle" over the row only
    /// while it still says this. A writer may mark an idle row busy while the listener is writing it idle again (a
    /// refresh, or a re-publish); the listener's write waits for that writer's commit and must not then erase its mark
    /// (the relay would look idle through the batch that writer's notification starts, and every writer meanwhile
    /// would notify).
    var rowSaysIdle: Bool { publishedIdle }

    /// The listener's idle write found the row marked busy by a writer since (and left it): that writer's
    /// notification is on its way.
    mutating func markedBusyByWriter() {
        publishedIdle = false
    }

    /// Whether the writers that were open when the row said idle still matter: a writer that read "busy" just before
    /// may commit rows nobody was woken for. Once woken, the relay looks until it finds nothing, and its next idle
    /// period follows the writers open then.
    var followsOpenWriters: Bool { publishedIdle }
}
