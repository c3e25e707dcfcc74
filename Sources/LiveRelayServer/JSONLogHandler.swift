import Foundation
import LiveRelayCore
import Logging

/// Writes each log event as one JSON object on a line (`LOG_FORMAT=json`), for a log collector: `time` (ISO 8601,
/// UTC, milliseconds), `level`, `logger` (the label), `message`, `error` when the event carries one, then the metadata,
/// the logger's and the event's (the event's wins), whose keys never replace those. One `write` per event, so lines
/// never interleave.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    private let label: String
    private let write: @Sendable (String) -> Void
    /// `2026-11-28T04:26:52.010Z`.
    static let timeStyle = Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: .gmt)

    /// - Parameter write: where each line goes (standard error unless a test says otherwise).
    public init(label: String, write: @escaping @Sendable (String) -> Void = Self.standardError) {
        self.label = label
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var members: [String: JSONValue] = [:]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            members[key] = Self.json(value)
        }
        if let error = event.error { members["error"] = .string("\(error)") }
        members["time"] = .string(Date().ISO8601Format(Self.timeStyle))
        members["level"] = .string(event.level.rawValue)
        members["logger"] = .string(label)
        members["message"] = .string(event.message.description)
        write(JSONValue.object(members).compactText + "\n")
    }

    /// A metadata value as the JSON it reads as: text, a list or an object.
    static func json(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case .string(let text): .string(text)
        case .stringConvertible(let convertible): .string(convertible.description)
        case .array(let values): .array(values.map(json))
        case .dictionary(let members): .object(members.mapValues(json))
        }
    }

    @Sendable public static func standardError(_ line: String) {
        FileHandle.standardError.write(Data(line.utf8))
    }
}
