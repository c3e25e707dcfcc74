import Foundation
import LiveRelayPostgres
import Logging
import PostgresNIO

/// The HTTP routes' pool, with a deadline on every use (`PostgresClient` waits forever for an unreachable server).
struct RouteDatabase: Sendable {
    let client: PostgresClient
    let logger: Logger
    var deadline: Duration = .seconds(10)

    func withConnection<Result: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> Result) async throws -> Result {
        do {
            return try await withDeadline(deadline, what: "waiting for the database") {
                try await client.withConnection { connection in try await body(connection) }
            }
        } catch is DeadlineExceeded {
            throw APIError(status: .serviceUnavailable, message: "the database did not answer in time")
        }
    }

    func withTransaction<Result: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> Result) async throws -> Result {
        try await withConnection { connection in
            try await connection.withTransaction(logger: logger) { connection in try await body(connection) }
        }
    }

    /// Runs one statement whose rows, if any, are not needed.
    func execute(_ query: PostgresQuery) async throws {
        _ = try await withConnection { connection in try await connection.query(query, logger: logger) }
    }

    /// Decodes all rows of a query.
    func rows<Row: Sendable>(_ query: PostgresQuery, as type: Row.Type) async throws -> [Row] where Row: PostgresDecodable {
        try await withConnection { connection in
            var rows: [Row] = []
            for try await row in try await connection.query(query, logger: logger).decode(Row.self) { rows.append(row) }
            return rows
        }
    }
}
