import Foundation

/// Where a stream request asks to resume: `Last-Event-ID` (or `?lastEventId=`), as the client sent it.
enum ResumePoint: Equatable {
    /// No id: a new stream, live events only.
    case none
    /// After this event id.
    case after(Int64)
    /// An id that no event of the stream can have (not a whole number of at least 0): resuming from it is impossible,
    /// and the client is told so rather than given live events as if it had missed nothing. Holds the first 64
    /// characters, for the message.
    case unreadable(String)

    /// Reads the header, or the query parameter when there is no header. Blank is none, as EventSource sends nothing
    /// before its first id.
    init(header: String?, query: String?) {
        guard let text = (header ?? query)?.trimmingCharacters(in: .whitespaces), !text.isEmpty else {
            self = .none
            return
        }
        guard let id = Int64(text), id >= 0 else {
            self = .unreadable(String(text.prefix(64)))
            return
        }
        self = .after(id)
    }
}
