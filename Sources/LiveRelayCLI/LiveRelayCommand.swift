import ArgumentParser
import Foundation
import Logging

/// `liverelay`: turns SQL writes into Live Activity pushes and Server-Sent Events.
@main
struct LiveRelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "liverelay",
        abstract: "Turns any SQL write into realtime delivery to phones (APNs Live Activities and Server-Sent Events).",
        subcommands: [DevCommand.self, ServeCommand.self, MigrateCommand.self, APNsSimCommand.self])
}

/// Sets up logging once, at `LOG_LEVEL` (default info), to standard error.
func bootstrapLogging(level: String? = ProcessInfo.processInfo.environment["LOG_LEVEL"]) -> Logger {
    let parsed = level.flatMap { Logger.Level(rawValue: $0.lowercased()) } ?? .info
    LoggingSystem.bootstrap { label in
        var handler = StreamLogHandler.standardError(label: label)
        handler.logLevel = parsed
        return handler
    }
    return Logger(label: "liverelay")
}

/// Prints one line to standard error and exits with status 1.
func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("\(message)\n".utf8))
    exit(1)
}
