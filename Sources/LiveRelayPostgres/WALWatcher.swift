import Foundation
import Logging
import LiveRelayWAL
import NIOCore
import NIOPosix
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Wakes the relay from the write-ahead log: a physical replication connection streams the WAL as it is flushed, and
/// `WALScanner` finds the commits of transactions that inserted outbox rows or stream events. The writers' triggers
/// then send no NOTIFY (this relay's gate row says busy while the log is read), which keeps NOTIFY's commit work and
/// the gate row out of every writer's transaction; the relay still wakes within the same moment of the commit.
///
/// Used when PostgreSQL allows it (`WALWakeupSettings`); otherwise, and whenever the connection is down, the relay
/// wakes by NOTIFY as before (`WakeupListener`), and every consumer looks again at each switch, so nothing committed
/// in between waits for the poll.
public final class WALWatcher: Service, Sendable {
    private let connector: DatabaseConnector
    private let listener: WakeupListener
    private let eventLoop: any EventLoop
    private let logger: Logger

    /// How often the settings that decide whether the log may be read are read again while it is.
    static let recheckEvery = Duration.seconds(60)
    /// How long after a relation file is created the watched tables' files are read again.
    static let rereadDelay = Duration.milliseconds(200)
    /// How long after PostgreSQL refused the log (its settings, or the replication connection) it is asked again.
    private let recheckRefused: Duration

    public init(connector: DatabaseConnector, listener: WakeupListener, eventLoop: any EventLoop,
                recheckRefused: Duration = .seconds(300), logger: Logger) {
        self.connector = connector
        self.listener = listener
        self.eventLoop = eventLoop
        self.recheckRefused = recheckRefused
        self.logger = logger
    }

    public func run() async throws {
        await cancelWhenGracefulShutdown { await self.watch() }
        // The log cannot be read (NOTIFY wakes the relay): stay until the relay stops, as every service does (a
        // service that returns stops the whole group).
        try? await gracefulShutdown()
    }

    private func watch() async {
        var backoff = Duration.seconds(1)
        var outage = OutageLog()
        // The refusal last logged, nil again once the log was read: the same one found at the next look is not.
        var refused: String?
        while !Task.isCancelled && !Task.isShuttingDownGracefully {
            let began = ContinuousClock.now
            var refusal: String?
            do {
                let settings = try await readSettings()
                refusal = settings.unusable
                if refusal == nil {
                    try await stream(settings)
                    continue
                }
            } catch {
                // A switch back to NOTIFY means the log was being read: whatever ended it is news.
                if listener.watchWAL(false) { refused = nil }
                try? await sayReadsWAL(false)
                if Task.isCancelled || Task.isShuttingDownGracefully { return }
                refusal = Self.finalReason(error)
                if refusal == nil && refused == nil {
                    // A connection that served for a while was not failing: the next attempt comes at once (a second).
                    if ContinuousClock.now - began > .seconds(60) { backoff = .seconds(1) }
                    if outage.failed(safeDescription(error), at: .now) == .warning {
                        logger.warning("wake-ups come by NOTIFY until the replication connection is back", metadata: [
                            "error": "\(safeDescription(error))",
                            "retry_in_ms": "\(backoff.components.seconds * 1000)",
                        ])
                    }
                    try? await Task.sleep(for: backoff)
                    backoff = min(backoff * 2, .seconds(30))
                    continue
                }
            }
            // Refused for a reason only the operator can change (a role, a setting), or refused before and this look
            // failed (the database away): NOTIFY wakes the relay, and the log is asked for again now and then, so
            // that the fix takes effect without a restart.
            if let refusal, refusal != refused {
                logger.notice("wake-ups come by NOTIFY: \(refusal)", metadata: [
                    "asked_again_every_s": "\(recheckRefused.components.seconds)",
                ])
                refused = refusal
            }
            try? await Task.sleep(for: recheckRefused)
        }
    }

    /// Why `error` stops the watch until the next look `recheckRefused` later (nil when trying again soon may help):
    /// the connection was refused for a reason only the operator can change, or the settings no longer allow it.
    static func finalReason(_ error: any Error) -> String? {
        switch error {
        case let failure as ReplicationFailure where failure.isPermanent:
            "the replication connection was refused: \(failure)"
        case let change as WALWakeupSettings.Change: change.reason
        default: nil
        }
    }

    /// Streams until the connection ends (it throws then).
    private func stream(_ settings: WALWakeupSettings) async throws {
        let endpoint = ReplicationEndpoint(
            host: connector.configuration.host ?? "localhost", port: connector.configuration.port ?? 5432,
            user: connector.configuration.username, password: connector.configuration.password,
            database: connector.configuration.database,
            // Named after the gate row, so that pg_stat_replication tells which relay each connection is.
            applicationName: "liverelay-wal-" + listener.instanceID.uuidString.prefix(8).lowercased(),
            connectTimeout: connector.connectTimeout, tls: connector.replicationTLS)
        // The watched tables' files as last read, for the stream to take before its next bytes.
        let reread = PendingWatch()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                // The settings may change while the log is read (a synchronous standby configured): look again now
                // and then, and stop reading when they no longer allow it.
                while true {
                    try await Task.sleep(for: Self.recheckEvery)
                    let now = try await self.readSettings()
                    if let reason = now.unusable { throw WALWakeupSettings.Change(reason) }
                    reread.set(now.watched)
                }
            }
            group.addTask {
                var scanner: WALScanner?
                try await ReplicationStream.run(endpoint, on: self.eventLoop, ready: { start in
                    // The page of the flushed end: every commit from there on is read (one that ended before is
                    // found by the look every consumer takes when the log takes over).
                    let first = start.flushed / 8192 * 8192
                    scanner = WALScanner(start: first, watched: settings.watched, segmentSize: settings.segmentSize)
                    self.listener.watchWAL(true)
                    try await self.sayReadsWAL(true)
                    self.logger.notice("wake-ups come from the write-ahead log", metadata: [
                        "from": "\(first.walText)", "postgresql": "\(start.serverVersion)",
                    ])
                    return first
                }, receive: { lsn, bytes in
                    guard scanner != nil else { return }
                    if let watched = reread.take() { scanner!.watch(watched) }
                    let events = try scanner!.feed(bytes, at: lsn)
                    if events.contains(.relationsChanged) {
                        // A new relation file (TRUNCATE, VACUUM FULL): read the tables' files once the transaction
                        // that made it is surely visible (its commit reaches the log a moment before; inserts into
                        // the new file wake meanwhile), then look for what went into them.
                        Task {
                            try? await Task.sleep(for: Self.rereadDelay)
                            guard let now = try? await self.readSettings() else { return }
                            reread.set(now.watched)
                            self.listener.ringAll()
                        }
                    }
                    if events.contains(.outboxCommitted) {
                        self.listener.walCommitted(outbox: true)
                    } else if events.contains(.logCommitted) {
                        self.listener.walCommitted(outbox: false)
                    }
                })
            }
            defer { group.cancelAll() }
            try await group.next()
        }
    }

    /// Says in this relay's gate row whether it reads the log, for writers that commit asynchronously (their commits
    /// reach the log late: they notify such a relay; sql/020_triggers.sql). The listener writes the rest of the row.
    private func sayReadsWAL(_ reading: Bool) async throws {
        _ = try await connector.withConnection(logger: logger) { connection in
            try await ConnectionScope.run(on: connection, deadline: .seconds(10), what: "writing the gate row") {
                try await connection.query("""
                    INSERT INTO relay_wakeup (instance_id, idle, updated_at, reads_wal)
                    VALUES (\(self.listener.instanceID), false, now(), \(reading))
                    ON CONFLICT (instance_id) DO UPDATE SET reads_wal = excluded.reads_wal
                    """, logger: self.logger)
            }
        }
    }

    private func readSettings() async throws -> WALWakeupSettings {
        try await connector.withConnection(logger: logger) { connection in
            try await ConnectionScope.run(on: connection, deadline: .seconds(10), what: "reading the WAL settings") {
                try await WALWakeupSettings.read(on: connection, logger: self.logger)
            }
        }
    }
}

/// The watched tables' files as last read, handed to the stream before its next bytes.
private final class PendingWatch: Sendable {
    private let value = Mutex<WALScanner.Watched?>(nil)

    func set(_ watched: WALScanner.Watched) { value.withLock { $0 = watched } }

    func take() -> WALScanner.Watched? { value.withLock { $0.take() } }
}
