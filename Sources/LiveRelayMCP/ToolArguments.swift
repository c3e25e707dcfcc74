import Foundation
import LiveRelayCore
import LiveRelayStore
import MCP

/// The arguments of one tool call, read with checks whose failures are sentences for the model.
struct ToolArguments {
    let values: [String: Value]

    /// Refuses arguments the tool does not take (a misspelt name would otherwise be ignored silently).
    init(_ values: [String: Value]?, allowed: Set<String>) throws {
        self.values = values ?? [:]
        let unknown = Set(self.values.keys).subtracting(allowed)
        guard unknown.isEmpty else {
            throw StoreError.invalidArgument(
                "unknown argument \(unknown.sorted().joined(separator: ", ")); this tool takes "
                    + allowed.sorted().joined(separator: ", "))
        }
    }

    private func present(_ name: String) -> Value? {
        guard let value = values[name], value != .null else { return nil }
        return value
    }

    func string(_ name: String) throws -> String? {
        guard let value = present(name) else { return nil }
        guard case .string(let text) = value else { throw StoreError.invalidArgument("\(name) must be a string") }
        guard !text.utf8.contains(0) else {
            throw StoreError.invalidArgument("\(name) must not contain NUL characters")
        }
        return text
    }

    func integer(_ name: String, default fallback: Int, range: ClosedRange<Int>) throws -> Int {
        guard let value = present(name) else { return fallback }
        let number: Int?
        switch value {
        case .int(let integer): number = integer
        case .double(let double) where double.rounded() == double && abs(double) < 1e9: number = Int(double)
        case .string(let text): number = Int(text)
        default: number = nil
        }
        guard let number, range.contains(number) else {
            throw StoreError.invalidArgument(
                "\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }

    /// A JSON object argument, as the relay's JSON value.
    func object(_ name: String) throws -> JSONValue? {
        guard let value = present(name) else { return nil }
        guard case .object = value else {
            throw StoreError.invalidArgument("\(name) must be a JSON object, like {\"progress\": 0.5}")
        }
        return try Self.relayValue(value)
    }

    /// An alert to show with a push (`{title, body}`), checked as the HTTP routes check it.
    func alert(_ name: String) throws -> JSONValue? {
        guard let value = present(name) else { return nil }
        let alert = try Self.relayValue(value)
        if let problem = alert.alertProblem(named: name) { throw StoreError.invalidArgument(problem) }
        return alert
    }

    func choice<Choice: RawRepresentable & CaseIterable>(_ name: String, as type: Choice.Type) throws -> Choice?
        where Choice.RawValue == String {
        guard let text = try string(name), !text.isEmpty else { return nil }
        guard let choice = Choice(rawValue: text) else {
            throw StoreError.invalidArgument(Choice.refusal(of: text, named: name))
        }
        return choice
    }

    /// The device named by `device_uuid` or `deviceName` (also read as `device_name`), exactly one.
    func device() throws -> DeviceSelector {
        let name = try string("deviceName") ?? string("device_name")
        return try DeviceSelector(uuid: try string("device_uuid"), name: name)
    }

    /// The activity named by `session_id` or `id`, exactly one.
    func activity() throws -> ActivitySelector {
        try ActivitySelector(id: try string("id"), sessionID: try string("session_id"))
    }

    /// An MCP value as the relay's JSON value.
    static func relayValue(_ value: Value) throws -> JSONValue {
        try JSONValue(parsing: String(decoding: try JSONEncoder().encode(value), as: UTF8.self))
    }

    /// An ISO 8601 date (or epoch seconds).
    func date(_ name: String) throws -> Date? {
        guard let value = present(name) else { return nil }
        guard let date = parseTimestamp(try Self.relayValue(value)) else {
            throw StoreError.invalidArgument("\(name) must be an ISO 8601 date like 2026-11-23T18:30:00Z")
        }
        return date
    }
}
