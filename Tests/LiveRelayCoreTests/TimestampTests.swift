import Foundation
import LiveRelayCore
import Testing

/// The dates the API takes (staleDate, dismissalDate), read without Foundation's formatter seeing the fraction.
@Suite("Timestamps")
struct TimestampTests {
    @Test("RFC 3339 with any fraction (ICU crashed on ~50 digits and misread 10), offsets, epoch seconds")
    func parses() {
        let base = 720_996_791.0  // 1992-11-05T20:53:11Z
        let cases: [(String, Double)] = [
            ("1992-11-05T20:53:11Z", base),
            ("1992-11-05T20:53:11.5Z", base + 0.5),
            ("1992-11-05T20:53:11.7988993762Z", base + 0.798_899_376),
            ("1992-11-05T20:53:11.79889937626999804978806703316910231042Z", base + 0.798_899_376),
            ("1992-11-05T21:53:11.25+01:00", base + 0.25),
            ("720996791", base),
            // Written in 1970 and 9999, past either end by its offset: held at that end.
            ("1970-01-01T00:00:45+01:00", 0), ("9999-12-31T23:59:59-01:00", 253_402_300_799),
            // A leap year's February 29th, and a negative offset with minutes.
            ("2024-02-29T00:00:00Z", 1_709_164_800), ("2024-02-28T20:30:00-03:30", 1_709_164_800),
            // Offsets past the ±18 hours a TimeZone takes (checking one of these crashed the relay once).
            ("2024-02-28T01:50:00-22:10", 1_709_164_800), ("2024-02-29T23:59:00+23:59", 1_709_164_800),
        ]
        for (text, seconds) in cases {
            let date = parseTimestamp(.string(text))
            let off = date.map { abs($0.timeIntervalSince1970 - seconds) }
            #expect(off.map { $0 < 0.000_01 } == true, "\(text): \(String(describing: date))")
        }
        #expect(parseTimestamp(.integer(0)) == Date(timeIntervalSince1970: 0))
    }

    @Test("every offset the grammar allows, -23:59 to +23:59, reads as the same instant")
    func everyOffset() {
        let instant = 1_709_164_800  // 2024-02-29T00:00:00Z
        for sign in [1, -1] {
            for hours in 0...23 {
                for minutes in [0, 1, 30, 59] {
                    let offset = sign * (hours * 3600 + minutes * 60)
                    let local = Date(timeIntervalSince1970: Double(instant + offset))
                    let formatter = ISO8601DateFormatter()
                    formatter.formatOptions = [.withFullDate, .withTime, .withColonSeparatorInTime,
                                               .withDashSeparatorInDate]
                    let zone = (sign < 0 ? "-" : "+") + String(format: "%02d:%02d", hours, minutes)
                    let text = formatter.string(from: local) + zone
                    #expect(parseTimestamp(.string(text)) == Date(timeIntervalSince1970: Double(instant)), "\(text)")
                }
            }
        }
    }

    @Test("anything else, dates written outside 1970-9999 and epoch seconds past either end are nil")
    func refuses() {
        for text in ["", "soon", "1992-11-05", "1992-11-05T20:53Z", "1992-11-05T20:53:11", "1992-11-05 20:53:11Z",
                     "1992-13-05T20:53:11Z", "1969-12-31T23:59:59Z", "1992-11-05T20:53:11+88:85", "nan", "-1",
                     "1992-11-05T20:53:11." + String(repeating: "9", count: 60) + "Z",
                     // Days and times that do not exist, which Foundation's formatter rolls over into others.
                     "2026-02-30T00:00:00Z", "2026-02-29T12:00:00+01:00", "2026-04-31T00:00:00Z",
                     "2026-11-27T24:00:00Z", "2026-11-27T23:60:00Z", "2026-11-27T23:59:60Z", "2026-00-10T00:00:00Z"] {
            #expect(parseTimestamp(.string(text)) == nil, "\(text)")
        }
        #expect(parseTimestamp(.bool(true)) == nil)
        #expect(parseTimestamp(.number(253_402_300_800)) == nil)
    }
}
