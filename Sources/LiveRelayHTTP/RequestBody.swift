import Foundation
import Hummingbird
import LiveRelayCore
import NIOCore

extension Request {
    /// The JSON body decoded into `Body`. Every problem is a 400 that names the field; a body over
    /// `RequestLimits.maximumBodyBytes` is a 413.
    func decode<Body: Decodable>(as type: Body.Type) async throws -> Body {
        let buffer = try await body.collect(upTo: RequestLimits.maximumBodyBytes)
        // The project's parser reads the body first: it says where a body stops being JSON (Foundation on Linux
        // does not), and refuses a key given twice, of which Foundation would take the first and every other reader
        // of the same text the last.
        let parsed: JSONValue
        switch BodyFields.parse(buffer) {
        case .success(let value): parsed = value
        case .failure(let problem): throw APIError.badRequest("the body must be JSON (\(problem.text))")
        }
        let read = FieldNamesRead()
        let decoder = JSONDecoder()
        decoder.userInfo[.fieldNamesRead] = read
        // A misspelt field explains a refusal better than the refusal itself ("secret is required" for "Secret").
        let misspelling = { BodyFields.misspelling(in: parsed, fields: read.names).map(APIError.badRequest) }
        let body: Body
        do {
            body = try decoder.decode(Body.self, from: Data(buffer: buffer))
        } catch let error as DecodingError {
            throw misspelling() ?? APIError.badRequest(BodyFields.sentence(for: error))
        } catch {
            throw misspelling() ?? error
        }
        if let misspelt = misspelling() { throw misspelt }
        return body
    }
}

/// Typed, checked access to the members of a JSON object while a body type decodes itself: an optional string that
/// is empty counts as not given, strings are bounded and free of NUL, choices name their allowed values.
struct BodyFields {
    struct Key: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(_ name: String) { stringValue = name }
        init?(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    let container: KeyedDecodingContainer<Key>

    /// Where the names of the fields read are recorded, when the decoder carries a place for them.
    let read: FieldNamesRead?

    init(_ decoder: any Decoder) throws {
        guard let container = try? decoder.container(keyedBy: Key.self) else {
            throw APIError.badRequest("the body must be a JSON object")
        }
        self.container = container
        read = decoder.userInfo[.fieldNamesRead] as? FieldNamesRead
    }

    func has(_ name: String) -> Bool {
        read?.names.insert(name)
        return container.contains(Key(name))
    }

    /// The member as any JSON value; nil when missing or null.
    func value(_ name: String) throws -> JSONValue? {
        read?.names.insert(name)
        let value = try container.decodeIfPresent(JSONValue.self, forKey: Key(name))
        return value == .null ? nil : value
    }

    func optionalString(_ name: String, maxLength: Int = 4096) throws -> String? {
        switch try value(name) {
        case nil: return nil
        case .string(let text)?:
            guard !text.isEmpty else { return nil }
            guard !text.utf8.contains(0) else { throw APIError.containsNUL(name) }
            // Characters (Unicode scalars), as JSON Schema's maxLength and PostgreSQL's length() count them.
            guard text.unicodeScalars.count <= maxLength else {
                throw APIError.badRequest("\(name) is longer than \(maxLength) characters")
            }
            return text
        default: throw APIError.badRequest("\(name) must be a string")
        }
    }

    func string(_ name: String, maxLength: Int = 4096) throws -> String {
        if case .string("")? = try value(name) { throw APIError.badRequest("\(name) must not be empty") }
        guard let text = try optionalString(name, maxLength: maxLength) else {
            throw APIError.badRequest("\(name) is required")
        }
        return text
    }

    /// A string that must be given when present (an alert's `title`: an empty one shows a blank notification).
    func optionalNonEmptyString(_ name: String, maxLength: Int = 4096) throws -> String? {
        if case .string("")? = try value(name) {
            throw APIError.badRequest("\(name) must not be empty (leave it out for the default)")
        }
        return try optionalString(name, maxLength: maxLength)
    }

    /// A required string a client may send under either of two names: both only with the same value.
    func string(_ name: String, or alias: String, maxLength: Int = 4096) throws -> String {
        switch (try optionalString(name, maxLength: maxLength), try optionalString(alias, maxLength: maxLength)) {
        case (let value?, nil), (nil, let value?): return value
        case (let value?, let other?) where value == other: return value
        case (_?, _?): throw APIError.badRequest("\(name) and \(alias) differ: give one of them")
        case (nil, nil): throw APIError.badRequest("\(name) (or \(alias)) is required")
        }
    }

    func optionalObject(_ name: String) throws -> JSONValue? {
        switch try value(name) {
        case nil: return nil
        case .object(let members)?:
            guard !Self.containsNUL(.object(members)) else { throw APIError.containsNUL(name) }
            return .object(members)
        default: throw APIError.badRequest("\(name) must be a JSON object")
        }
    }

    /// True when a key or string anywhere in `value` holds U+0000 (jsonb refuses it).
    static func containsNUL(_ value: JSONValue) -> Bool {
        switch value {
        case .string(let text): text.utf8.contains(0)
        case .array(let elements): elements.contains(where: containsNUL)
        case .object(let members): members.contains { $0.key.utf8.contains(0) || containsNUL($0.value) }
        default: false
        }
    }

    /// An alert (`{title, body}`, strings when given) to show with a push.
    func optionalAlert(_ name: String) throws -> JSONValue? {
        let alert = try optionalObject(name)
        if let problem = alert?.alertProblem(named: name) { throw APIError.badRequest(problem) }
        return alert
    }

    func optionalBool(_ name: String) throws -> Bool? {
        switch try value(name) {
        case nil: return nil
        case .bool(let value)?: return value
        default: throw APIError.badRequest("\(name) must be true or false")
        }
    }

    func optionalUUID(_ name: String) throws -> UUID? {
        guard let text = try optionalString(name, maxLength: 64) else { return nil }
        guard let uuid = UUID(uuidString: text) else { throw APIError.badRequest("\(name) must be a UUID") }
        return uuid
    }

    /// One of an enum's raw values. An empty string is taken as left out (the default), as the OpenCode relay's
    /// clients expect, unless `emptyIsMissing` is false (a field whose presence means a change).
    func optionalChoice<Choice: RawRepresentable & CaseIterable>(
        _ name: String, as type: Choice.Type, emptyIsMissing: Bool = true
    ) throws -> Choice? where Choice.RawValue == String {
        if !emptyIsMissing, try value(name) == .string("") {
            throw APIError.badRequest(Choice.refusal(of: "", named: name))
        }
        guard let text = try optionalString(name, maxLength: 64) else { return nil }
        guard let choice = Choice(rawValue: text) else {
            throw APIError.badRequest(Choice.refusal(of: text, named: name))
        }
        return choice
    }

    /// Epoch seconds (number or numeric string) or ISO 8601, between 1970 and 9999.
    func optionalDate(_ name: String) throws -> Date? {
        guard let value = try value(name) else { return nil }
        return try Self.date(value, name)
    }

    static func date(_ value: JSONValue, _ name: String) throws -> Date {
        guard let date = parseTimestamp(value) else {
            throw APIError.badRequest("\(name) must be epoch seconds or an ISO 8601 date between 1970 and 9999")
        }
        return date
    }

    /// A decoding error as a sentence naming the field.
    static func sentence(for error: DecodingError) -> String {
        func path(_ context: DecodingError.Context, _ last: (any CodingKey)? = nil) -> String {
            (context.codingPath + (last.map { [$0] } ?? [])).map { $0.intValue.map { "[\($0)]" } ?? $0.stringValue }
                .joined(separator: ".")
        }
        switch error {
        case .keyNotFound(let key, let context): return "\(path(context, key)) is required"
        case .valueNotFound(_, let context): return "\(path(context)) is required"
        case .typeMismatch(let type, let context) where context.codingPath.isEmpty:
            return type == [Any].self ? "the body must be a JSON array" : "the body must be a JSON object"
        case .typeMismatch(let type, let context): return "\(path(context)) must be \(describe(type))"
        // (Text the project's parser read, that Foundation did not: bytes that are not UTF-8.)
        case .dataCorrupted(let context) where context.codingPath.isEmpty: return "the body must be JSON"
        case .dataCorrupted(let context): return "\(path(context)): \(context.debugDescription)"
        @unknown default: return "the body could not be read"
        }
    }

    /// Where a body stops being JSON, as the project's parser says it ("expected ',' or '}' at byte 12"): Foundation
    /// on Linux says only that the data was not valid JSON.
    struct SyntaxProblem: Error {
        var text: String
    }

    /// The body as the project's parser reads it, or the `SyntaxProblem` that stops it.
    static func parse(_ body: ByteBuffer) -> Result<JSONValue, SyntaxProblem> {
        guard body.readableBytes > 0 else { return .failure(SyntaxProblem(text: "it is empty")) }
        do {
            return .success(try JSONValue(parsing: String(buffer: body)))
        } catch {
            return .failure(SyntaxProblem(text: (error as? DecodingError)?.jsonSyntaxProblem ?? "it could not be read"))
        }
    }

    private static func describe(_ type: Any.Type) -> String {
        switch type {
        case is String.Type: "a string"
        case is Int.Type, is Int64.Type, is Int32.Type: "a whole number"
        case is Double.Type: "a number"
        case is Bool.Type: "true or false"
        default: "of another type"
        }
    }
}
