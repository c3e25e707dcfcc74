import Foundation
import Synchronization

/// The `Date` header value, formatted at most once a second.
public final class HTTPDate: Sendable {
    public init() {}

    private struct Cached {
        var second: Int = -1
        var text = ""
    }
    private let cached = Mutex(Cached())

    public func now() -> String {
        let date = Date()
        let second = Int(date.timeIntervalSince1970)
        return cached.withLock { cached in
            if cached.second != second {
                cached.second = second
                cached.text = Self.format(date)
            }
            return cached.text
        }
    }

    /// RFC 9110 IMF-fixdate, e.g. `Sun, 06 Nov 1994 08:49:37 GMT`.
    public static func format(_ date: Date) -> String {
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = .gmt
        let parts = calendar.dateComponents([.weekday, .day, .month, .year, .hour, .minute, .second], from: date)
        let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ value: Int?) -> String { String(format: "%02d", value ?? 0) }
        return "\(weekdays[(parts.weekday ?? 1) - 1]), \(two(parts.day)) \(months[(parts.month ?? 1) - 1]) "
            + "\(parts.year ?? 1970) \(two(parts.hour)):\(two(parts.minute)):\(two(parts.second)) GMT"
    }
}
