import ArgumentParser
import Foundation
import LiveRelayCore
import LiveRelayServer
import Logging
import NIOCore
import NIOPosix

/// The process entry point: Swift concurrency runs on NIO's event loops, so a task awaiting a PostgreSQL or APNs
/// answer resumes on the loop that read it instead of hopping to a separate thread pool (the relay's hot path is a
/// chain of such awaits: wake-up, claim, send, record).
@main
enum Main {
    static func main() {
        _ = NIOSingletons.unsafeTryInstallSingletonPosixEventLoopGroupAsConcurrencyGlobalExecutor()
        Task {
            await LiveRelayCommand.main()
            exit(0)
        }
        dispatchMain()
    }
}

/// `liverelay`: turns SQL writes into Live Activity pushes and Server-Sent Events.
struct LiveRelayCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "liverelay",
        abstract: "Turns any SQL write into realtime delivery to phones (APNs and FCM pushes, Server-Sent Events).",
        version: LiveRelayVersion.current,
        subcommands: [DevCommand.self, ServeCommand.self, MigrateCommand.self, APNsSimCommand.self, FCMSimCommand.self,
                      HealthCommand.self, MCPCommand.self])
}

/// Sets up logging once, at `LOG_LEVEL` (default info), to standard error, as lines of text or, with
/// `LOG_FORMAT=json`, of JSON (`serve` passes the values its configuration checked; other commands read them as given,
/// text when unreadable).
func bootstrapLogging(level: String? = ProcessInfo.processInfo.environment["LOG_LEVEL"],
                      format: LogFormat? = nil) -> Logger {
    let parsed = level.flatMap { Logger.Level(rawValue: $0.lowercased()) } ?? .info
    let given = ProcessInfo.processInfo.environment["LOG_FORMAT"]?.trimmingCharacters(in: .whitespaces).lowercased()
    let format = format ?? given.flatMap(LogFormat.init(rawValue:)) ?? .text
    LoggingSystem.bootstrap { label in
        var handler: any LogHandler = switch format {
        case .text: StreamLogHandler.standardError(label: label)
        case .json: JSONLogHandler(label: label)
        }
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
