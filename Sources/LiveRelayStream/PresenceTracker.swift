import Foundation
import LiveRelayPostgres
import Logging
import PostgresNIO
import ServiceLifecycle
import Synchronization

/// Tells the cluster which devices and sessions have their app open on this relay (`stream_presence`, see
/// sql/025_foreground.sql), on a connection of its own: each stream that counts is written before its response
/// begins, and removed when it closes; a heartbeat every `heartbeatInterval` keeps them counting, and a relay that
/// stops beating stops counting within the window (20 s). Each beat also sweeps relays that died.
///
/// The bookkeeping is `PresenceBook` (no I/O); this type runs its writes.
public final class PresenceTracker: Service, Sendable {
    private struct State {
        var book = PresenceBook()
        var waiters: [Int64: CheckedContinuation<Void, Never>] = [:]
    }

    /// This relay's id in `relay_instance`.
    public let relayID = UUID()
    private let connector: DatabaseConnector
    private let logger: Logger
    private let state = Mutex(State())
    private let doorbell = Doorbell()
    let heartbeatInterval: Duration
    /// The longest a stream's response waits for its presence to be written (then it goes on: its pushes are not
    /// lowered until the write lands).
    let entryWait: Duration

    public init(connector: DatabaseConnector, logger: Logger, heartbeatInterval: Duration = .seconds(5),
                entryWait: Duration = .seconds(2)) {
        self.connector = connector
        self.logger = logger
        self.heartbeatInterval = heartbeatInterval
        self.entryWait = entryWait
    }

    /// Registers an open stream's keys and returns once the database has them (or `entryWait` passed); the id is
    /// for `leave`. Nil when there is nothing to register.
    public func enter(_ keys: [PresenceKey]) async -> Int64? {
        guard !keys.isEmpty else { return nil }
        let id = state.withLock { $0.book.enter(keys) }
        doorbell.ring()
        _ = try? await withDeadline(entryWait, what: "writing a stream's presence") {
            await self.waitUntilWritten(id)
        }
        return id
    }

    /// The stream closed: it stops counting with the next write (at once).
    public func leave(_ id: Int64) {
        let waiter = state.withLock { state in
            state.book.leave(id)
            return state.waiters.removeValue(forKey: id)
        }
        waiter?.resume()
        doorbell.ring()
    }

    private func waitUntilWritten(_ id: Int64) async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let written = state.withLock { state in
                    guard state.book.isUnwritten(id), !Task.isCancelled else { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if written { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    public func run() async throws {
        await withGracefulShutdownHandler {
            await connector.runReconnecting(
                role: "presence tracker", logger: logger,
                shouldStop: { Task.isCancelled || Task.isShuttingDownGracefully },
                onFailure: { self.failed(nil) }
            ) { connection in
                try await self.beat(on: connection)
            }
        } onGracefulShutdown: {
            self.doorbell.ring()
        }
        // Stopping: this relay's streams stop counting now rather than when the window ends.
        do {
            _ = try await connector.withConnection(logger: logger) { connection in
                try await ConnectionScope.run(on: connection, deadline: .seconds(2), what: "leaving presence") {
                    try await connection.query("SELECT liverelay_presence_leave(\(self.relayID))", logger: self.logger)
                }
            }
        } catch {
            logger.debug("could not remove this relay's presence; it expires", metadata: ["error": "\(error)"])
        }
    }

    /// Writes what changed at once, and a heartbeat (with a sweep of dead relays) every `heartbeatInterval`.
    private func beat(on connection: PostgresConnection) async throws {
        let clock = ContinuousClock()
        var nextBeat = clock.now
        while !(Task.isCancelled || Task.isShuttingDownGracefully) {
            let beatDue = clock.now >= nextBeat
            guard let write = state.withLock({ state in
                beatDue || state.book.hasChanges ? state.book.startWrite() : nil
            }) else {
                await doorbell.wait(timeout: max(.milliseconds(1), nextBeat - clock.now))
                continue
            }
            do {
                let created = try await run(write, sweep: beatDue, on: connection)
                let resumed = state.withLock { state in
                    state.book.writeSucceeded(created: created, write: write)
                    return write.resumes.compactMap { state.waiters.removeValue(forKey: $0) }
                }
                resumed.forEach { $0.resume() }
            } catch {
                failed(write)
                throw error
            }
            if beatDue { nextBeat = clock.now + heartbeatInterval }
        }
    }

    private func failed(_ write: PresenceBook.Write?) {
        let resumed = state.withLock { state in
            state.book.writeFailed()
            return (write?.resumes ?? []).compactMap { state.waiters.removeValue(forKey: $0) }
        }
        resumed.forEach { $0.resume() }
    }

    private func run(_ write: PresenceBook.Write, sweep: Bool, on connection: PostgresConnection) async throws -> Bool {
        var deviceStreams: [Int64] = [], devices: [UUID] = []
        var sessionStreams: [Int64] = [], hashes: [String] = [], sessions: [String] = []
        for entry in write.entered {
            switch entry.key {
            case .device(let uuid):
                deviceStreams.append(entry.stream)
                devices.append(uuid)
            case .session(let hash, let session):
                sessionStreams.append(entry.stream)
                hashes.append(hash)
                sessions.append(session)
            }
        }
        let query: PostgresQuery = """
            SELECT liverelay_presence_update(\(relayID), \(deviceStreams)::int8[], \(devices)::uuid[],
                \(sessionStreams)::int8[], \(hashes)::text[], \(sessions)::text[], \(write.left)::int8[],
                \(write.replaceAll), \(sweep))
            """
        let logger = self.logger
        return try await ConnectionScope.run(on: connection, deadline: .seconds(10), what: "writing presence") {
            var created = false
            let rows = try await connection.query(query, logger: logger)
            for try await value in rows.decode(Bool.self) { created = value }
            return created
        }
    }
}
