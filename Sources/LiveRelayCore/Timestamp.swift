import Foundation

/// The dates the API and the tools accept: epoch seconds from 0 to 253402300799 (a number, or a numeric string) or an
/// RFC 3339 date-time written with a year from 1970 to 9999 (`2026-11-27T03:41:28Z`, `2026-11-27T04:41:28.038+01:00`;
/// an offset that takes it past either end is held at that end). Nil for anything else.
public func parseTimestamp(_ value: JSONValue) -> Date? {
    let seconds: Double?
    switch value {
    case .integer(let integer): seconds = Double(integer)
    case .number(let number): seconds = number
    case .string(let text):
        if let number = Double(text) {
            seconds = number
        } else {
            seconds = InternetDate.parse(text).map { min(max($0.timeIntervalSince1970, 0), InternetDate.latest) }
        }
    default: seconds = nil
    }
    guard let seconds, seconds.isFinite, (0...InternetDate.latest).contains(seconds) else { return nil }
    return Date(timeIntervalSince1970: seconds)
}

/// RFC 3339 date-times. The fraction of a second is read here, not by Foundation's formatter: ICU misreads a
/// fraction of ten digits or more and crashes the process (SIGFPE) on one of some fifty, which any client could send.
enum InternetDate {
    /// 9999-12-31T23:59:59Z.
    static let latest: Double = 253_402_300_799

    nonisolated(unsafe) static let shape = try! Regex(
        #"((?:19[7-9][0-9]|[2-9][0-9]{3})-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2})(\.[0-9]+)?"#
            + #"(Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"#,
        as: (Substring, Substring, Substring?, Substring).self)

    static func parse(_ text: String) -> Date? {
        guard text.utf8.count <= 64, let match = text.wholeMatch(of: shape) else { return nil }
        let (_, wholeSeconds, fraction, zone) = match.output
        guard let date = ISO8601DateFormatter().date(from: String(wholeSeconds + zone)),
              written(date, in: zone) == wholeSeconds else { return nil }
        // Nine digits are a nanosecond, more than a Date holds.
        return date.addingTimeInterval(fraction.flatMap { Double("0" + $0.prefix(10)) } ?? 0)
    }

    /// `date` written again as it was read, in its own offset and without it. The formatter rolls a day or time that
    /// does not exist over into one that does (February 30th into March 2nd, 24:00 into the next day), so a date-time
    /// that is not one reads back differently. (The date is moved by the offset and written in UTC: a formatter
    /// given no time zone, which `TimeZone(secondsFromGMT:)` is past ±18 hours, crashes the process.)
    static func written(_ date: Date, in zone: Substring) -> String {
        let minutes = zone == "Z" ? 0 : (Int(zone.dropFirst().prefix(2)) ?? 0) * 60 + (Int(zone.suffix(2)) ?? 0)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withFullDate, .withTime, .withColonSeparatorInTime, .withDashSeparatorInDate]
        return formatter.string(from: date.addingTimeInterval(Double((zone.hasPrefix("-") ? -minutes : minutes) * 60)))
    }
}
