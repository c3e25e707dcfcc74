import Foundation
import LiveRelayCore
import LiveRelayPostgres
import Logging
import NIOCore
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// One event of the foreground stream.
public struct BroadcastEvent: Sendable, Hashable {
    public var sequence: Int64
    public var channels: [String]
    public var name: String
    /// The `data:` JSON text.
    public var data: String
}

/// Tails `broadcast_log` and hands each event to the SSE subscribers of its channels, in sequence order.
///
/// Sequences are taken when a row is inserted, so a lower one can commit after a higher one. The hub never skips
/// one: at a gap it holds later events back until the gap's row appears, or until every transaction that was running
/// when the gap was seen has ended (then the row was rolled back and the gap is passed): `GapTracker`.
public final class BroadcastHub: Service, Sendable {
    /// What a subscriber receives.
    public enum Item: Sendable {
        case event(BroadcastEvent)
        case heartbeat
    }

    struct Subscriber {
        var channels: Set<String>
        var sink: any StreamSink
    }

    struct State {
        var order = GapTracker()
        var subscribers: [UUID: Subscriber] = [:]
        /// Channel → its subscribers, so an event reaches its readers without a scan of everyone.
        var byChannel: [String: Set<UUID>] = [:]
        /// Reads of the log begun so far, and who waits for the end of a read (by its number): `catchUp`.
        var readsBegun = 0
        var catchUps: [(read: Int, bell: Doorbell)] = []
    }

    let connector: DatabaseConnector
    private let listener: WakeupListener
    let logger: Logger
    let state = Mutex(State())
    private let doorbell: Doorbell
    /// Rung when the hub must read now although nobody is subscribed: a catch-up, a first subscriber, shutdown.
    /// While idle the hub waits on this one alone, so the wake-ups it lets pass cost no thread a wake-up.
    private let attention: Doorbell
    /// Where its connection lives and its task runs (nil: any loop).
    private let eventLoop: (any EventLoop)?
    let retention: Duration
    /// How long the hub lets the rings that follow a first one gather before it reads, while it has subscribers. One
    /// write rings the hub up to three times within a millisecond or so (its writer's wake-up, the end of the batch
    /// that sent its push, the relay going idle), and each read is a round trip on the hub's own connection. Read at
    /// once, the first ran beside the write's claim and push and slowed that push (B10, 500 apps open against none:
    /// ~0.05 ms at p50, and ~650 µs more CPU per write between the relay and PostgreSQL). One read per window serves
    /// them all, after the push has gone.
    let gatherWindow: Duration
    /// The longest the hub waits for a ring before it reads anyway.
    let pollInterval: Duration
    /// The most events one read of the log takes.
    static let readLimit = 2000

    /// - Parameter eventLoop: where its connection lives, its task runs and its doorbells keep their timers, so
    ///   that a read, its deadline and its wait are handled on one thread (by default any loop, and the timers on
    ///   another, which could make every wait and every ring a wake-up of a second thread).
    public init(connector: DatabaseConnector, listener: WakeupListener, logger: Logger,
                retention: Duration = .seconds(24 * 3600), gatherWindow: Duration = .milliseconds(2),
                pollInterval: Duration = .seconds(1), eventLoop: (any EventLoop)? = nil) {
        self.connector = connector
        self.listener = listener
        self.logger = logger
        self.retention = retention
        self.gatherWindow = gatherWindow
        self.pollInterval = pollInterval
        // Rung on every wake-up, but not part of the wake-up gate: it reads what the workers' batches and the gate's
        // re-scans ring it for, and never keeps writers from waking the workers.
        doorbell = listener.register(loop: eventLoop).doorbell
        attention = eventLoop.map { Doorbell(timers: $0) } ?? Doorbell()
        self.eventLoop = eventLoop
    }

    /// Subscribes `sink` to channels; returns the subscription's id and the last sequence the hub had delivered when
    /// it subscribed (events after it go to the sink; earlier ones can be read from the log).
    public func subscribe(channels: Set<String>, sink: any StreamSink) -> (id: UUID, cursor: Int64) {
        let id = UUID()
        let (cursor, first) = state.withLock { state in
            state.subscribers[id] = Subscriber(channels: channels, sink: sink)
            for channel in channels { state.byChannel[channel, default: []].insert(id) }
            return (state.order.cursor, state.subscribers.count == 1)
        }
        // The hub reads at every wake-up from now on, not every 100 ms.
        if first { attention.ring() }
        return (id, cursor)
    }

    /// Ends a subscription; `stopping` when the relay is shutting down (the sink says goodbye).
    public func unsubscribe(_ id: UUID, stopping: Bool = false) {
        let subscriber = state.withLock { state -> Subscriber? in
            guard let subscriber = state.subscribers.removeValue(forKey: id) else { return nil }
            for channel in subscriber.channels {
                state.byChannel[channel]?.remove(id)
                if state.byChannel[channel]?.isEmpty == true { state.byChannel[channel] = nil }
            }
            return subscriber
        }
        subscriber?.sink.finish(stopping: stopping)
    }

    public var subscriberCount: Int { state.withLock { $0.subscribers.count } }

    /// Brings the hub's position up to now before a first subscriber takes it (waits for a read that begins after
    /// this call, at most `timeout`). With nobody subscribed the hub reads at most every 100 ms rather than at every
    /// wake-up (the reads cost each write ~0.6 ms of the relay's CPU for no reader), so its position may be 100 ms old
    /// (a second when nothing is written), and a subscriber that took it would be sent those events.
    public func catchUp(timeout: Duration = .seconds(2)) async {
        let bell = Doorbell()
        let waits = state.withLock { state -> Bool in
            guard state.subscribers.isEmpty else { return false }
            state.catchUps.append((state.readsBegun + 1, bell))
            return true
        }
        guard waits else { return }
        doorbell.ring()
        attention.ring()
        await bell.wait(timeout: timeout)
    }

    /// True once the hub has read the log's position.
    public var isStarted: Bool { state.withLock { $0.order.isStarted } }

    /// Waits (bounded) until the hub knows the log's position, so a new subscriber misses nothing written after it.
    public func waitUntilStarted(timeout: Duration = .seconds(5)) async throws {
        let deadline = ContinuousClock.now + timeout
        while !isStarted {
            guard ContinuousClock.now < deadline else { throw DeadlineExceeded(what: "waiting for the broadcast log") }
            try await Task.sleep(for: .milliseconds(5))
        }
    }

    public func run() async throws {
        var lastHeartbeat = ContinuousClock.now
        var lastPrune = ContinuousClock.now - .seconds(3600)
        await withGracefulShutdownHandler {
            await EventLoopExecutor.run(on: eventLoop) {
                await connector.runReconnecting(
                    role: "broadcast hub", logger: logger, on: eventLoop,
                    shouldStop: { Task.isCancelled || Task.isShuttingDownGracefully }
                ) { connection in
                    try await follow(on: connection, lastHeartbeat: &lastHeartbeat, lastPrune: &lastPrune)
                }
            }
        } onGracefulShutdown: {
            // Stop now rather than at the end of the current wait (up to a second).
            self.doorbell.ring()
            self.attention.ring()
        }
        let subscribers = state.withLock { state in
            defer {
                state.subscribers.removeAll()
                state.byChannel.removeAll()
            }
            return Array(state.subscribers.values)
        }
        subscribers.forEach { $0.sink.finish(stopping: true) }
    }

    /// Reads the log on one connection until stopped.
    private func follow(on connection: PostgresConnection, lastHeartbeat: inout ContinuousClock.Instant,
                        lastPrune: inout ContinuousClock.Instant) async throws {
        let position = "reading the broadcast log position"
        try await ConnectionScope.run(on: connection, deadline: .seconds(30), what: position) {
            try await self.startCursor(on: connection)
        }
        // While a gap holds events back, the hub looks again after 5 ms, then less often (a writer that holds its
        // transaction open can hold a gap for minutes), at least every 200 ms.
        var gapWait = Duration.milliseconds(5)
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let result = try await ConnectionScope.run(
                on: connection, deadline: .seconds(30), what: "reading the broadcast log"
            ) {
                try await self.poll(on: connection)
            }
            if ContinuousClock.now - lastHeartbeat >= .seconds(10) {
                heartbeat()
                lastHeartbeat = .now
            }
            if ContinuousClock.now - lastPrune >= .seconds(600) {
                try await ConnectionScope.run(
                    on: connection, deadline: .seconds(60), what: "pruning the broadcast log"
                ) {
                    try await self.prune(on: connection)
                }
                lastPrune = .now
            }
            if result.heldBack {
                await doorbell.wait(timeout: gapWait)
                gapWait = min(gapWait * 2, .milliseconds(200))
                continue
            }
            gapWait = .milliseconds(5)
            // A full read: more is waiting. Otherwise everything committed when it read was delivered, and whatever
            // commits later rings the bell (a writer's wake-up, a delivery batch, the gate's re-scan), which keeps
            // a ring that comes while it reads.
            if result.delivered < Self.readLimit {
                let waited = ContinuousClock.now
                await doorbell.wait(timeout: pollInterval)
                // With no subscriber (and no one catching up), the wake-ups that come within 100 ms of the last read
                // are let pass: it reads at most every 100 ms. (Not once a second: a second's events, ~600 in B1, read
                // at once held up the pushes beside them, and B1's worst writes came at that period.) They are kept
                // by the doorbell meanwhile, unheard: only `attention` ends the wait early.
                if isIdle { await attention.wait(timeout: waited + .milliseconds(100) - .now) }
                // With subscribers, the rings that follow the first one gather for one read (`gatherWindow`).
                if state.withLock({ !$0.subscribers.isEmpty }) {
                    await letRingsPass(until: .now + gatherWindow)
                }
            }
        }
    }

    private func startCursor(on connection: PostgresConnection) async throws {
        guard !isStarted else { return }
        var maximum: Int64 = 0
        for try await value in try await connection.query(
            "SELECT coalesce(max(seq), 0)::int8 FROM broadcast_log", logger: logger
        ).decode(Int64.self) { maximum = value }
        state.withLock { $0.order.start(at: maximum) }
    }

    /// Nobody subscribed and nobody catching up.
    private var isIdle: Bool { state.withLock { $0.subscribers.isEmpty && $0.catchUps.isEmpty } }

    /// Reads of the log begun so far.
    var readsBegun: Int { state.withLock { $0.readsBegun } }

    /// Absorbs the rings that come until `until`, so that one read serves them.
    private func letRingsPass(until: ContinuousClock.Instant) async {
        while ContinuousClock.now < until && !Task.isCancelled && !Task.isShuttingDownGracefully {
            await doorbell.wait(timeout: until - .now)
        }
    }

    private func heartbeat() {
        for subscriber in state.withLock({ Array($0.subscribers.values) }) { _ = subscriber.sink.send(.heartbeat) }
    }

    /// The channel name that follows every channel (the dashboard's, for the admin).
    public static let everyChannel = "*"
}
