import Foundation
import Testing
@testable import LiveRelayStream

/// Presence bookkeeping on its own: what each write to `stream_presence` carries, for the interleavings of streams
/// opening and closing with writes running, failing, and finding the relay's rows swept.
@Suite("Presence book")
struct PresenceBookTests {
    static let phone = PresenceKey.device(UUID(uuidString: "00000000-0000-4000-8000-000000000001")!)
    static let session = PresenceKey.session(secretHash: "ab", sessionID: "s1")

    struct NoWrite: Error {}

    static func write(_ book: inout PresenceBook) throws -> PresenceBook.Write {
        guard let write = book.startWrite() else { throw NoWrite() }
        return write
    }

    @Test("the first write replaces everything; later writes carry only what changed, and wake only their streams")
    func incremental() throws {
        var book = PresenceBook()
        let a = book.enter([Self.phone, Self.session])
        let first = try Self.write(&book)
        #expect(first.replaceAll && first.entered.map(\.stream) == [a, a] && first.resumes == [a])
        #expect(book.isUnwritten(a))
        #expect(book.startWrite() == nil, "one write at a time")
        let b = book.enter([Self.phone])
        book.writeSucceeded(created: true, write: first)
        #expect(!book.isUnwritten(a) && book.isUnwritten(b))
        let second = try Self.write(&book)
        #expect(!second.replaceAll && second.entered.map(\.stream) == [b])
        #expect(second.left.isEmpty && second.resumes == [b])
        book.writeSucceeded(created: false, write: second)
        book.leave(a)
        #expect(book.hasChanges)
        let third = try Self.write(&book)
        #expect(third.entered.isEmpty && third.left == [a] && third.resumes.isEmpty)
        book.writeSucceeded(created: false, write: third)
        #expect(!book.hasChanges)
        // A heartbeat: a write with nothing in it.
        let beat = try Self.write(&book)
        #expect(beat == PresenceBook.Write(entered: [], left: [], replaceAll: false, resumes: []))
    }

    @Test("""
        a stream that closes before its entry is written costs no write; one closing while its entry is in flight \
        is removed next
        """)
    func closeEarly() throws {
        var book = PresenceBook()
        let first = try Self.write(&book)
        book.writeSucceeded(created: true, write: first)
        let gone = book.enter([Self.phone])
        book.leave(gone)
        #expect(!book.hasChanges && !book.isUnwritten(gone))
        let racing = book.enter([Self.session])
        let carrying = try Self.write(&book)
        book.leave(racing)
        book.writeSucceeded(created: false, write: carrying)
        let next = try Self.write(&book)
        #expect(next.left == [racing] && next.entered.isEmpty)
    }

    @Test("a failed write, or rows swept while the relay paused, make the next write replace everything it holds")
    func replaceAfterLoss() throws {
        var book = PresenceBook()
        let a = book.enter([Self.phone])
        let first = try Self.write(&book)
        book.writeSucceeded(created: true, write: first)
        let b = book.enter([Self.session])
        let failing = try Self.write(&book)
        book.writeFailed()
        let retry = try Self.write(&book)
        #expect(retry.replaceAll && retry.entered.map(\.stream) == [a, b])
        #expect(failing.resumes == [b] && retry.resumes.isEmpty, "b's enter was resumed when its write failed")
        book.writeSucceeded(created: false, write: retry)
        // The heartbeat finds the row gone (another relay swept it): everything again.
        let beat = try Self.write(&book)
        book.writeSucceeded(created: true, write: beat)
        let again = try Self.write(&book)
        #expect(again.replaceAll && again.entered.map(\.stream) == [a, b])
    }
}
