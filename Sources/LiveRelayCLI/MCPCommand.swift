import ArgumentParser
import Foundation
import LiveRelayMCP
import LiveRelayPostgres
import LiveRelayStore
import PostgresNIO

/// `liverelay mcp`: the MCP tools over stdio for a local agent, writing through `DATABASE_URL` like any writer.
struct MCPCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mcp",
        abstract: "Serve the MCP tools over standard input and output (configured by DATABASE_URL).",
        discussion: """
            For a local agent: add `liverelay mcp` as a stdio MCP server with DATABASE_URL in its environment. \
            Logs go to standard error. A running relay delivers what the tools write; the same tools are at \
            POST /mcp on the relay, with the admin token.
            """)

    func run() async throws {
        let logger = bootstrapLogging()
        let connector = databaseConnectorFromEnvironment()
        let pool = connector.makePool(logger: logger)
        let probe = ConnectionProbe(connector: connector, logger: logger)
        let store = RelayStore(client: pool, logger: logger, diagnose: { await probe.problem() })
        let tools = RelayTools(store: store, logger: logger)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { await pool.run() }
            try await MCPStdioServer(tools: tools).run()
            group.cancelAll()
        }
    }
}
