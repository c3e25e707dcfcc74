import Foundation
import LiveRelayCore
import LiveRelayPostgres
import Logging
import PostgresNIO

/// Every operation a person, an app or an agent performs on the relay's data, in domain types and typed errors:
/// the HTTP routes, the MCP tools and the tests all go through it. Writes go to the tables like any SQL writer's,
/// so the triggers deliver them; reads come from the tables and views.
public struct RelayStore: Sendable {
    public let client: PostgresClient
    public let logger: Logger
    /// How long one operation may wait for the database (`PostgresClient` waits forever for an unreachable server).
    public var deadline: Duration
    /// Says why no connection can be made (`ConnectionProbe`), or nil when one can. When set, a call still waiting
    /// after a second asks it, and a reason ends the wait with that reason: for `liverelay mcp` "cannot connect to
    /// PostgreSQL at db:5432: Connection refused" (the operator's own tool), for the relay's routes "the database
    /// cannot be reached" (which keep the address to themselves), where the call would have answered "the database
    /// did not answer in time" at its deadline.
    public var diagnose: (@Sendable () async -> String?)?

    public init(
        client: PostgresClient, logger: Logger, deadline: Duration = .seconds(10),
        diagnose: (@Sendable () async -> String?)? = nil
    ) {
        self.client = client
        self.logger = logger
        self.deadline = deadline
        self.diagnose = diagnose
    }

    /// Runs `body` on a pooled connection within the deadline; the database's refusals become `StoreError`.
    public func withConnection<Result: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        do {
            return try await withinDeadline { [client] in
                try await client.withConnection { connection in try await body(connection) }
            }
        } catch let error as StoreError {
            throw error
        } catch let error where Self.refusal(error) != nil {
            throw Self.refusal(error)!
        }
    }

    /// Runs `operation`, cancelling it at the deadline, or (with `diagnose`) once a second's wait has found the
    /// database unreachable: either way with `StoreError.unavailable`. One watchdog does both, so a call costs no more
    /// tasks with a diagnosis than without. (The diagnosis ends within the probe's connect deadline, 5 s, inside the
    /// default 10 s.)
    private func withinDeadline<Result: Sendable>(
        _ operation: @escaping @Sendable () async throws -> Result
    ) async throws -> Result {
        let deadline = self.deadline, diagnose = self.diagnose
        return try await racing(operation) {
            let end = ContinuousClock.now + deadline
            if let diagnose, deadline > .seconds(1) {
                try await Task.sleep(for: .seconds(1))
                if let problem = await diagnose() { throw StoreError.unavailable(problem) }
            }
            try await Task.sleep(until: end, clock: .continuous)
            throw StoreError.unavailable("the database did not answer in time")
        }
    }

    public func withTransaction<Result: Sendable>(
        _ body: @escaping @Sendable (PostgresConnection) async throws -> Result
    ) async throws -> Result {
        try await withConnection { connection in
            do {
                return try await connection.withTransaction(logger: logger) { connection in try await body(connection) }
            } catch let error as PostgresTransactionError {
                if let inner = error.closureError as? StoreError { throw inner }
                throw error
            }
        }
    }

    /// Runs one statement whose rows are not needed.
    public func execute(_ query: PostgresQuery) async throws {
        _ = try await withConnection { connection in try await connection.query(query, logger: logger) }
    }

    /// Decodes the rows of a query that selects one value per row.
    public func values<Value: PostgresDecodable & Sendable>(_ query: PostgresQuery, as type: Value.Type) async throws
        -> [Value] {
        try await withConnection { connection in
            try await Self.values(query, as: type, on: connection, logger: logger)
        }
    }

    static func values<Value: PostgresDecodable & Sendable>(
        _ query: PostgresQuery, as type: Value.Type, on connection: PostgresConnection, logger: Logger
    ) async throws -> [Value] {
        var rows: [Value] = []
        for try await row in try await connection.query(query, logger: logger).decode(Value.self) { rows.append(row) }
        return rows
    }

    /// Rows selected as JSON text (`json_build_object(...)::text`), decoded into a domain type.
    func records<Record: Decodable & Sendable>(_ query: PostgresQuery, as type: Record.Type) async throws -> [Record] {
        try await values(query, as: String.self).map { try Self.decode(type, from: $0) }
    }

    static func decode<Record: Decodable>(_ type: Record.Type, from json: String) throws -> Record {
        try JSONDecoder().decode(type, from: Data(json.utf8))
    }

    /// The database's refusal behind `error`: a data exception (22…) or an integrity violation (23…, a trigger's
    /// check among them), directly or inside a failed transaction.
    public static func refusal(_ error: any Error) -> StoreError? {
        let psql = (error as? PSQLError) ?? ((error as? PostgresTransactionError)?.closureError as? PSQLError)
        guard let psql, let state = psql.serverInfo?[.sqlState], state.hasPrefix("22") || state.hasPrefix("23") else {
            return nil
        }
        let message = psql.serverInfo?[.message] ?? "the database refused the value"
        return state == "23505" ? .conflict(message) : .refused(message)
    }
}
