import NIOCore
import NIOHPACK
import NIOHTTP2
import Testing
@testable import LiveRelayHTTP2Client

/// An HTTP/2 client connection's streams on their own: every frame's effect on the requests waiting, without a
/// channel, TLS or a server. Waiters are numbers.
@Suite("HTTP/2 stream table")
struct HTTP2StreamTableTests {
    typealias Table = HTTP2StreamTable<Int>

    static func head(_ status: Int) -> HPACKHeaders { [":status": "\(status)", "apns-id": "x"] }

    static func describe(_ answer: Table.Answer?) -> String? {
        answer.map(describe)
    }

    static func describe(_ answer: Table.Answer) -> String {
        switch answer.result {
        case .success(let response):
            "\(answer.waiter): \(response.status) \(response.body.map { String(buffer: $0) } ?? "")"
        case .failure(let error):
            "\(answer.waiter): \(error)"
        }
    }

    static func opened(_ count: Int) -> (Table, [HTTP2StreamID]) {
        var table = Table()
        let ids = (0..<count).compactMap { table.open($0) }
        return (table, ids)
    }

    @Test("streams get odd ids in order; a head and a body end in one answer to the right waiter")
    func answers() {
        var (table, ids) = Self.opened(2)
        #expect(ids == [1, 3])
        let informational = table.headers(Self.head(100), endStream: false, on: 3)
        let head = table.headers(Self.head(400), endStream: false, on: 3)
        #expect(informational == nil && head == nil, "answered before the stream ended")
        let answer = table.data(ByteBuffer(string: #"{"reason":"BadDeviceToken"}"#), endStream: true, on: 3)
        #expect(Self.describe(answer) == #"1: 400 {"reason":"BadDeviceToken"}"#)
        let headOnly = table.headers(Self.head(200), endStream: true, on: 1)
        #expect(Self.describe(headOnly) == "0: 200 ")
        #expect(table.streams.isEmpty && !table.isDrained, "an open connection with nothing waiting stays open")
    }

    @Test("frames for streams nobody waits for (answered, cancelled, unknown) change nothing")
    func strayFrames() {
        var (table, ids) = Self.opened(1)
        let resets = [table.cancel(ids[0]), table.cancel(ids[0])]
        #expect(resets == [true, false], "a cancelled stream is reset once")
        let late = table.headers(Self.head(200), endStream: true, on: ids[0])
        let unknown = table.data(ByteBuffer(string: "x"), endStream: true, on: 99)
        let unknownReset = table.reset(99, code: .cancel)
        #expect(late == nil && unknown == nil && unknownReset == nil)
    }

    @Test("a body past the limit is dropped, the answer still comes")
    func bodyLimit() throws {
        var (table, ids) = Self.opened(1)
        _ = table.headers(Self.head(200), endStream: false, on: ids[0])
        _ = table.data(ByteBuffer(repeating: 1, count: Table.maximumBodyBytes), endStream: false, on: ids[0])
        let last = table.data(ByteBuffer(repeating: 2, count: 1), endStream: true, on: ids[0])
        let answer = try #require(last)
        #expect((try? answer.result.get())?.body?.readableBytes == Table.maximumBodyBytes)
    }

    @Test("a stream that ends without a head is a protocol error; REFUSED_STREAM was not processed; other resets are")
    func endsAndResets() {
        var (table, ids) = Self.opened(3)
        let headless = table.data(ByteBuffer(), endStream: true, on: ids[0])
        #expect(Self.describe(headless)?.contains("without a :status") == true)
        guard case .failure(.notProcessed)? = table.reset(ids[1], code: .refusedStream)?.result else {
            Issue.record("REFUSED_STREAM was not 'not processed'")
            return
        }
        guard case .failure(.streamReset)? = table.reset(ids[2], code: .internalError)?.result else {
            Issue.record("INTERNAL_ERROR was not a reset")
            return
        }
    }

    /// The connection closes when the last stream up to GOAWAY's last stream is answered.
    @Test("GOAWAY while streams are open: those past its last stream are not processed, the rest still answered")
    func goAwayWithOpenStreams() {
        var (table, ids) = Self.opened(4)  // 1, 3, 5, 7
        let refused = table.goAway(lastStreamID: 3, code: .noError)
        #expect(refused.map(\.waiter) == [2, 3])
        #expect(refused.allSatisfy { if case .failure(.notProcessed) = $0.result { true } else { false } })
        let after = table.open(9)
        #expect(after == nil, "a new stream after GOAWAY")
        #expect(!table.isDrained)
        _ = table.headers(Self.head(200), endStream: true, on: ids[0])
        #expect(!table.isDrained, "stream 3 still waits")
        let last = table.headers(Self.head(410), endStream: true, on: ids[1])
        #expect(Self.describe(last) == "1: 410 ")
        #expect(table.isDrained)
    }

    @Test("a stream NIOHTTP2 closed: cleanly after a head it is answered; otherwise it failed")
    func closedByTheCodec() {
        var (table, ids) = Self.opened(2)
        _ = table.headers(Self.head(200), endStream: false, on: ids[0])
        let clean = table.closed(ids[0], reason: nil)
        #expect(Self.describe(clean) == "0: 200 ")
        guard case .failure(.streamReset)? = table.closed(ids[1], reason: nil)?.result else {
            Issue.record("a stream closed without a head was answered")
            return
        }
    }

    @Test("the connection lost: every waiter fails once, and nothing opens after")
    func connectionLost() {
        var (table, _) = Self.opened(3)
        let failed = table.fail(all: .connectionClosed)
        #expect(failed.map(\.waiter) == [0, 1, 2] && table.isDrained)
        let again = table.fail(all: .connectionClosed), after = table.open(3)
        #expect(again.isEmpty && after == nil)
    }

    @Test("a request that did not leave whole was not processed")
    func notSent() {
        var (table, ids) = Self.opened(1)
        guard case .failure(.notProcessed)? = table.notSent(ids[0], because: "connection reset")?.result else {
            Issue.record("a request that never left was not 'not processed'")
            return
        }
        let again = table.notSent(ids[0], because: "again")
        #expect(again == nil)
    }
}
