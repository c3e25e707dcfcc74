@testable import LiveRelayHTTP
import Testing

/// What a stream request's `Last-Event-ID` (or `?lastEventId=`) asks for, read on its own.
@Suite("Stream resume point")
struct ResumePointTests {
    @Test("an id resumes after it; none or blank is a new stream; anything else is unreadable, not ignored")
    func reading() {
        #expect(ResumePoint(header: nil, query: nil) == .none)
        #expect(ResumePoint(header: "  ", query: nil) == .none)
        #expect(ResumePoint(header: "42", query: nil) == .after(42))
        #expect(ResumePoint(header: " 0 ", query: nil) == .after(0))
        #expect(ResumePoint(header: nil, query: "7") == .after(7))
        #expect(ResumePoint(header: "9", query: "7") == .after(9), "the header wins, as EventSource sends it")
        #expect(ResumePoint(header: "abc", query: nil) == .unreadable("abc"))
        #expect(ResumePoint(header: "-5", query: nil) == .unreadable("-5"))
        #expect(ResumePoint(header: "99999999999999999999", query: nil) == .unreadable("99999999999999999999"))
        #expect(ResumePoint(header: String(repeating: "x", count: 500), query: nil)
            == .unreadable(String(repeating: "x", count: 64)), "the message quotes a bounded part")
    }
}
