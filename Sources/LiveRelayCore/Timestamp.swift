import Foundation

/// The dates the API and the tools accept: epoch seconds (a number, or a numeric string) or ISO 8601 (with or without
/// fractional seconds), between 1970 and 9999. Nil for anything else.
public func parseTimestamp(_ value: JSONValue) -> Date? {
    let seconds: Double?
    switch value {
    case .integer(let integer): seconds = Double(integer)
    case .number(let number): seconds = number
    case .string(let text):
        if let number = Double(text) {
            seconds = number
        } else {
            let formatter = ISO8601DateFormatter()
            var date = formatter.date(from: text)
            if date == nil {
                formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                date = formatter.date(from: text)
            }
            seconds = date?.timeIntervalSince1970
        }
    default: seconds = nil
    }
    guard let seconds, seconds.isFinite, (0...253_402_300_799).contains(seconds) else { return nil }
    return Date(timeIntervalSince1970: seconds)
}
