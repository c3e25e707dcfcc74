import Foundation
import Testing
@testable import LiveRelayStream

/// The stream's order on its own: every interleaving of commits and snapshots the hub can read, without PostgreSQL.
@Suite("Broadcast log order (gaps)")
struct GapTrackerTests {
    static func rows(_ sequences: Int64...) -> [BroadcastEvent] {
        sequences.map { BroadcastEvent(sequence: $0, channels: ["session:s"], name: "activity-update", data: "{}") }
    }

    static func passed(_ result: (passed: [BroadcastEvent], heldBack: Bool)) -> [Int64] {
        result.passed.map(\.sequence)
    }

    @Test("not started until the log's position is read; the position is set once")
    func start() {
        var order = GapTracker()
        #expect(!order.isStarted)
        order.start(at: 41)
        order.start(at: 99)
        #expect(order.isStarted && order.cursor == 41)
    }

    @Test("rows in sequence pass in order and move the cursor")
    func inSequence() {
        var order = GapTracker(cursor: 10)
        let result = order.accept(Self.rows(11, 12, 13), xmin: 500, xmax: 505)
        #expect(Self.passed(result) == [11, 12, 13] && !result.heldBack && order.cursor == 13)
        #expect(order.gaps.isEmpty)
    }

    @Test("a late commit: a gap holds later rows back until its row comes, then both pass in order")
    func lateCommit() {
        var order = GapTracker(cursor: 10)
        // 12 committed; 11's transaction (say 500) is still running: xmin 500, xmax 505.
        let first = order.accept(Self.rows(12), xmin: 500, xmax: 505)
        #expect(Self.passed(first) == [] && first.heldBack && order.cursor == 10 && order.gaps == [11: 505])
        // Read again while it still runs: still held, and the gap keeps the xmax it was first seen with.
        let second = order.accept(Self.rows(12), xmin: 500, xmax: 530)
        #expect(second.heldBack && order.gaps == [11: 505])
        let third = order.accept(Self.rows(11, 12), xmin: 520, xmax: 530)
        #expect(Self.passed(third) == [11, 12] && !third.heldBack && order.cursor == 12 && order.gaps.isEmpty)
    }

    @Test("a rolled-back sequence is passed once every transaction running when the gap was seen has ended")
    func rolledBack() {
        var order = GapTracker(cursor: 10)
        #expect(order.accept(Self.rows(12, 13), xmin: 500, xmax: 505).heldBack)
        // A transaction that started after the gap was seen (510) is still running: it cannot insert 11.
        let result = order.accept(Self.rows(12, 13), xmin: 505, xmax: 520)
        #expect(Self.passed(result) == [12, 13] && !result.heldBack && order.cursor == 13 && order.gaps.isEmpty)
    }

    @Test("one old transaction still running holds the gap, however late it is read")
    func oldTransactionHolds() {
        var order = GapTracker(cursor: 10)
        #expect(order.accept(Self.rows(12), xmin: 500, xmax: 505).heldBack)
        for xmax in stride(from: Int64(600), through: 900, by: 100) {
            #expect(order.accept(Self.rows(12, 13), xmin: 504, xmax: xmax).heldBack)
        }
        #expect(order.cursor == 10)
    }

    @Test("rows pruned with the retention window are passed at once when nothing is running")
    func prunedRange() {
        var order = GapTracker(cursor: 10)
        // 11…19 are gone from the log; nothing is running (xmin == xmax).
        let result = order.accept(Self.rows(20, 21), xmin: 700, xmax: 700)
        #expect(Self.passed(result) == [20, 21] && !result.heldBack && order.cursor == 21 && order.gaps.isEmpty)
    }

    @Test("the rows before a gap are passed; only those after it wait")
    func passesUpToTheGap() {
        var order = GapTracker(cursor: 10)
        let result = order.accept(Self.rows(11, 13, 14), xmin: 500, xmax: 505)
        #expect(Self.passed(result) == [11] && result.heldBack && order.cursor == 11 && order.gaps == [12: 505])
    }

    @Test("one read taken in chunks, as the hub passes rows on while they arrive, passes what one take of it does",
          arguments: [1, 2, 3, 5])
    func chunkedRead(chunk: Int) {
        // 15 went missing at xmax 310 and every transaction of then has ended by the read (xmin 400): it is passed;
        // 19 is missing for the first time: it holds 20 and 21 back. Without the earlier look, 15 holds from 16 on.
        for earlier in [true, false] {
            var whole = GapTracker(cursor: 10)
            if earlier { _ = whole.accept(Self.rows(11, 12, 13, 14, 16), xmin: 300, xmax: 310) }
            var chunked = whole
            let read = Self.rows(11, 12, 13, 14, 16, 17, 18, 20, 21)
            let once = whole.accept(read, xmin: 400, xmax: 405)
            var passed: [Int64] = []
            var heldBack = false
            for start in stride(from: 0, to: read.count, by: chunk) where !heldBack {
                let part = chunked.accept(Array(read[start..<min(start + chunk, read.count)]), xmin: 400, xmax: 405)
                passed += Self.passed(part)
                heldBack = part.heldBack
            }
            #expect(Self.passed(once) == (earlier ? [16, 17, 18] : [11, 12, 13, 14]) && once.heldBack)
            #expect(passed == Self.passed(once) && heldBack, "chunks of \(chunk), earlier look: \(earlier)")
            #expect(chunked.cursor == whole.cursor && chunked.gaps == whole.gaps)
        }
    }
}

/// The stream's channels, parsed once: the four forms, and a device's uuid named as the log names it.
@Suite("Stream channels")
struct StreamChannelTests {
    @Test("device, session, admin and every parse; anything else does not")
    func parse() {
        let uuid = UUID()
        #expect(StreamChannel(parsing: "device:\(uuid.uuidString)") == .device(uuid))
        #expect(StreamChannel(parsing: "session:ses_1") == .session("ses_1"))
        #expect(StreamChannel(parsing: "admin") == .admin && StreamChannel(parsing: "*") == .every)
        let refused = ["", "device:", "device:nope", "session:", "session:" + String(repeating: "x", count: 256),
                       "Admin", "user:1"]
        #expect(refused.allSatisfy { StreamChannel(parsing: $0) == nil })
        #expect(StreamChannel(parsing: "session:" + String(repeating: "x", count: 255)) != nil)
    }

    @Test("a device's uuid is named in lower case, as the broadcast log's rows name it")
    func names() {
        let uuid = UUID(uuidString: "0A1B2C3D-0000-4000-8000-00000000000F")!
        #expect(StreamChannel(parsing: "device:0A1B2C3D-0000-4000-8000-00000000000F")?.name
                == "device:0a1b2c3d-0000-4000-8000-00000000000f")
        #expect(StreamChannel.device(uuid).name == "device:0a1b2c3d-0000-4000-8000-00000000000f")
        #expect(StreamChannel.session("s").name == "session:s" && StreamChannel.every.name == "*")
    }
}
