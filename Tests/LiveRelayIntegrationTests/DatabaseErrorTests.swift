import Foundation
import LiveRelayPostgres
import LiveRelayStore
import Logging
import PostgresNIO
import Testing

/// What an operator reads when the database cannot be used: where, and why (the CLI's `migrate failed: …`,
/// `cannot prepare the database: …`, the relay's reconnect warnings, and `liverelay mcp`'s tool answers).
@Suite("Database errors")
struct DatabaseErrorTests {
    static let logger = Logger(label: "test")

    /// The description of the error `connect` throws for `url`.
    func connectError(_ url: String) async throws -> String {
        let connector = try DatabaseConnector(url: url, connectTimeout: .seconds(5))
        do {
            let connection = try await connector.connect(logger: Self.logger)
            try? await connection.close()
            Issue.record("connected to \(url)")
            return ""
        } catch {
            return safeDescription(error)
        }
    }

    @Test("a refused connection, a name that does not resolve, an unknown role or database: each said in words")
    func connecting() async throws {
        #expect(try await connectError("postgres://postgres@127.0.0.1:1/x?sslmode=disable")
            == "cannot connect to PostgreSQL at 127.0.0.1:1: Connection refused")
        // `.invalid` never resolves (RFC 6761).
        let lookup = try await connectError("postgres://postgres@db.liverelay.invalid:5432/x?sslmode=disable")
        #expect(lookup.hasPrefix(
            "cannot connect to PostgreSQL at db.liverelay.invalid:5432: the name does not resolve"), "\(lookup)")
        let database = try await Blocking.run(TestCluster.newDatabase)
        let role = database.replacingOccurrences(of: "postgres://postgres@", with: "postgres://nobody@")
        #expect(try await connectError(role) == #"PostgreSQL: role "nobody" does not exist (SQLSTATE 28000)"#)
        let missing = database.replacingOccurrences(
            of: #"/t_[0-9a-f]+\?"#, with: "/no_such_db?", options: .regularExpression)
        #expect(try await connectError(missing)
            == #"PostgreSQL: database "no_such_db" does not exist (SQLSTATE 3D000)"#)
        #expect(try await connectError(database.replacingOccurrences(of: "sslmode=disable", with: "sslmode=require"))
            == "PostgreSQL does not accept TLS connections, which DATABASE_URL's sslmode requires")
    }

    @Test("a store with a diagnosis answers with the reason before its deadline; without one, the generic sentence")
    func storeDiagnosis() async throws {
        let connector = try DatabaseConnector(url: "postgres://postgres@127.0.0.1:1/x?sslmode=disable")
        let pool = connector.makePool(logger: Self.logger)
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await pool.run() }
            // A minute's deadline: only the diagnosis can end the call with the reason.
            let diagnosed = RelayStore(client: pool, logger: Self.logger, deadline: .seconds(60),
                                       diagnose: { await connector.connectionProblem(logger: Self.logger) })
            let refused = "cannot connect to PostgreSQL at 127.0.0.1:1: Connection refused"
            await #expect(throws: StoreError.unavailable(refused)) {
                _ = try await diagnosed.outboxGauges()
            }
            // The relay's public routes keep the database's address to themselves.
            let plain = RelayStore(client: pool, logger: Self.logger, deadline: .milliseconds(300))
            await #expect(throws: StoreError.unavailable("the database did not answer in time")) {
                _ = try await plain.outboxGauges()
            }
            group.cancelAll()
        }
    }
}
