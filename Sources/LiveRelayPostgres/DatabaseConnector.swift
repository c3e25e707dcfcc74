import Synchronization
import Foundation
import Logging
import LiveRelayWAL
import NIOCore
import NIOSSL
import PostgresNIO

/// Opens PostgreSQL connections from a `DATABASE_URL`, always within a deadline
/// (PostgresNIO has none of its own for an unreachable server).
public struct DatabaseConnector: Sendable {
    public let configuration: PostgresConnection.Configuration
    public let connectTimeout: Duration
    private let ids = ConnectionIDs()

    /// - Parameters:
    ///   - url: `postgres://user:password@host:port/database`, with libpq's `sslmode`, `sslrootcert`, `sslcert`,
    ///     `sslkey` and `sslpassword` (`TLSSettings`).
    ///   - applicationName: shown in `pg_stat_activity`.
    public init(url: String, applicationName: String = "liverelay", connectTimeout: Duration = .seconds(5)) throws {
        guard let components = URLComponents(string: url), ["postgres", "postgresql"].contains(components.scheme ?? ""),
              let host = components.host, !host.isEmpty
        else { throw DatabaseURLError(problem: "is not a postgres:// URL with a host") }
        let query = { (name: String) in components.queryItems?.first(where: { $0.name == name })?.value }
        let tls = try TLSSettings(
            sslMode: query("sslmode") ?? "prefer", rootFile: query("sslrootcert"),
            client: ClientCertificateFiles(certificate: query("sslcert"), key: query("sslkey"),
                                           passphrase: query("sslpassword")),
            host: host)
        replicationTLS = tls.replication
        var database = components.path
        if database.hasPrefix("/") { database.removeFirst() }
        var configuration = PostgresConnection.Configuration(
            host: host,
            port: components.port ?? 5432,
            username: components.user?.removingPercentEncoding ?? "postgres",
            password: components.password?.removingPercentEncoding,
            database: database.isEmpty ? nil : database,
            tls: tls.session
        )
        // A second beyond the deadline of `connect`, so that the deadline, whose error names the server, fires first.
        configuration.options.connectTimeout = .seconds(connectTimeout.components.seconds + 1)
        configuration.options.additionalStartupParameters = [
            ("application_name", applicationName),
            ("statement_timeout", "30s"),
            ("lock_timeout", "10s"),
            ("idle_in_transaction_session_timeout", "60s"),
        ]
        self.configuration = configuration
        self.connectTimeout = connectTimeout
        var client = PostgresClient.Configuration(
            host: host, port: components.port ?? 5432, username: configuration.username,
            password: configuration.password,
            database: configuration.database,
            tls: tls.pool)
        client.options.connectTimeout = connectTimeout
        client.options.maximumConnections = 10
        client.options.additionalStartupParameters = configuration.options.additionalStartupParameters
        self.clientConfiguration = client
    }

    /// A pool configuration for the HTTP routes.
    public let clientConfiguration: PostgresClient.Configuration
    /// TLS for the replication connection (`WALWatcher`), as for every other (nil: `sslmode=disable`).
    public let replicationTLS: ReplicationTLS?

    /// Connects, or throws when the server does not answer within the deadline.
    /// - Parameter eventLoop: the loop the connection lives on (by default any of the shared group's).
    public func connect(logger: Logger, on eventLoop: (any EventLoop)? = nil) async throws -> PostgresConnection {
        let configuration = self.configuration
        let id = ids.next()
        let server = "PostgreSQL at \(configuration.host ?? "?"):\(configuration.port ?? 5432)"
        return try await withDeadline(connectTimeout, what: "connecting to \(server)") {
            let connection: PostgresConnection
            do {
                connection = try await PostgresConnection.connect(
                    on: eventLoop ?? PostgresConnection.defaultEventLoopGroup.any(),
                    configuration: configuration, id: id, logger: logger)
            } catch let error as PSQLError where error.code == .serverClosedConnection {
                // Its own description names neither the server nor the step.
                throw ConnectionClosedAtLogin(server: server)
            }
            if Task.isCancelled {
                try? await connection.close()
                throw CancellationError()
            }
            return connection
        }
    }

    /// Runs `body` on a fresh connection and closes it afterwards.
    public func withConnection<Result: Sendable>(
        logger: Logger, _ body: (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        let connection = try await connect(logger: logger)
        do {
            let result = try await body(connection)
            try? await connection.close()
            return result
        } catch {
            try? await connection.close()
            throw error
        }
    }
}

/// `DATABASE_URL` could not be understood.
public struct DatabaseURLError: Error, CustomStringConvertible {
    public var problem: String
    public var description: String { "DATABASE_URL \(problem)" }
}

/// The server (or something on the way) closed the connection before the login ended.
struct ConnectionClosedAtLogin: Error, CustomStringConvertible {
    var server: String
    var description: String { "cannot connect to \(server): the connection was closed before the login ended" }
}

/// An operation did not finish in time.
public struct DeadlineExceeded: Error, CustomStringConvertible {
    public var what: String
    public init(what: String) { self.what = what }
    public var description: String { "timed out \(what)" }
}

/// Runs `operation`, cancelling it and throwing `DeadlineExceeded` when it takes longer than `timeout`.
public func withDeadline<Result: Sendable>(
    _ timeout: Duration, what: String, _ operation: @escaping @Sendable () async throws -> Result
) async throws -> Result {
    try await racing(operation) {
        try await Task.sleep(for: timeout)
        throw DeadlineExceeded(what: what)
    }
}

/// Runs `operation` beside `watchdog`, which ends the wait by throwing (the operation is then cancelled); whichever
/// ends first ends both. A watchdog that returns leaves the operation to finish on its own.
public func racing<Result: Sendable>(
    _ operation: @escaping @Sendable () async throws -> Result,
    watchdog: @escaping @Sendable () async throws -> Void
) async throws -> Result {
    try await withThrowingTaskGroup(of: Result?.self) { group in
        group.addTask { try await operation() }
        group.addTask {
            try await watchdog()
            return nil
        }
        defer { group.cancelAll() }
        while let finished = try await group.next() {
            if let result = finished { return result }
        }
        throw CancellationError()
    }
}

private final class ConnectionIDs: Sendable {
    private let counter = Mutex<Int>(0)
    func next() -> Int { counter.withLock { $0 += 1; return $0 } }
}

extension DatabaseConnector {
    /// Runs `session` on a fresh connection, again and again: after it fails (or the connection drops) it reconnects
    /// with backoff (100 ms doubling to 2 s), until `shouldStop` says so. Each long-running part of the relay owns one.
    /// - Parameters:
    ///   - role: names the part in what it logs: a warning when it fails (repeated once a minute while the failure
    ///     lasts, `OutageLog`), a notice when it is connected again.
    ///   - onFailure: called after each failure, before the backoff.
    ///   - eventLoop: the loop each connection lives on (by default any of the shared group's).
    public func runReconnecting(
        role: String, logger: Logger, on eventLoop: (any EventLoop)? = nil, shouldStop: () -> Bool,
        onFailure: () -> Void = {}, _ session: (PostgresConnection) async throws -> Void
    ) async {
        var backoff = Duration.milliseconds(100)
        var outage = OutageLog()
        while !shouldStop() {
            do {
                let connection = try await connect(logger: logger, on: eventLoop)
                if let ended = outage.connected(at: .now) {
                    logger.notice("\(role) is connected to the database again", metadata: [
                        "failed_attempts": "\(ended.failures)", "after_ms": "\(milliseconds(ended.lasted))",
                    ])
                }
                backoff = .milliseconds(100)
                do {
                    try await session(connection)
                } catch {
                    try? await connection.close()
                    throw error
                }
                try? await connection.close()
            } catch {
                onFailure()
                if shouldStop() || error is CancellationError { break }
                let reason = safeDescription(error)
                var metadata: Logger.Metadata = ["error": "\(reason)", "retry_in_ms": "\(milliseconds(backoff))"]
                switch outage.failed(reason, at: .now) {
                case .warning:
                    if outage.failures > 1 {
                        metadata["failing_for_s"] = "\(outage.lasting(at: .now).components.seconds)"
                    }
                    logger.warning("\(role) lost its database connection; reconnecting", metadata: metadata)
                case .debug:
                    logger.debug("\(role) still cannot reach the database; reconnecting", metadata: metadata)
                }
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(2))
            }
        }
    }
}

private func milliseconds(_ duration: Duration) -> Int64 {
    duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000
}

/// An error as a log line without bind values: PostgresNIO's debug description carries the query's binds (tokens,
/// secrets), so for a `PSQLError` only the server's message and SQLSTATE are kept, or why no connection was made.
public func safeDescription(_ error: any Error) -> String {
    if let error = error as? PSQLError {
        if let failure = ConnectionFailure.describe(error) { return failure }
        guard let message = error.serverInfo?[.message] else { return "PSQLError \(error.code)" }
        let state = error.serverInfo?[.sqlState].map { " (SQLSTATE \($0))" } ?? ""
        return "PostgreSQL: \(message)\(state)"
    }
    if let tls = ConnectionFailure.tlsReason(error) { return "cannot connect to PostgreSQL: " + tls }
    if let error = error as? PostgresTransactionError {
        return "transaction failed: " + [error.beginError, error.closureError, error.commitError, error.rollbackError]
            .compactMap { $0.map(safeDescription) }.joined(separator: "; ")
    }
    return String(describing: error)
}
