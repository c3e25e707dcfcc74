/// `LOG_FORMAT`: how the relay writes its log to standard error.
public enum LogFormat: String, CaseIterable, Sendable {
    /// One line per event, for a person at a terminal.
    case text
    /// One JSON object per line (`time`, `level`, `logger`, `message`, then the event's metadata), for a collector.
    case json
}
