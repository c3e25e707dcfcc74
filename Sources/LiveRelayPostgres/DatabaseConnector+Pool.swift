import Logging
import PostgresNIO

extension DatabaseConnector {
    /// A connection pool for request-sized work (the HTTP routes, the MCP tools). Run it in a long-running task.
    ///
    /// While the server is unreachable the pool logs every failed attempt, about one a second, at info level, as a
    /// dump of NIO's error. That goes to debug level here: the relay's own sessions say the same once per retry, in
    /// words (`safeDescription`), and a store with `diagnose` answers with the reason.
    public func makePool(logger: Logger) -> PostgresClient {
        var background = logger
        if background.logLevel > .debug { background.logLevel = .warning }
        return PostgresClient(configuration: clientConfiguration, backgroundLogger: background)
    }

    /// Why a new connection cannot be made right now, in words ("cannot connect to PostgreSQL at db:5432: Connection
    /// refused"), or nil when one can (it is closed at once).
    public func connectionProblem(logger: Logger) async -> String? {
        do {
            let connection = try await connect(logger: logger)
            try? await connection.close()
            return nil
        } catch {
            return safeDescription(error)
        }
    }
}
