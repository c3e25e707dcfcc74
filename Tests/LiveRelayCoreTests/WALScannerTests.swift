import Testing
@testable import LiveRelayWAL

/// The write-ahead log scanner on its own, over WAL written as PostgreSQL 15 lays it out (`WALBuilder`): which commits
/// wake the relay, however the bytes are cut into messages and wherever the stream begins.
@Suite("WAL scanner")
struct WALScannerTests {
    typealias Event = WALScanner.Event
    static let watched = WALScanner.Watched(database: 5, outbox: 16_400, log: 16_410)

    /// Writes `records` one after the other and feeds each one's bytes as they are written: the events each gave.
    static func eventsPerRecord(_ records: [[UInt8]], wal: WALBuilder = WALBuilder()) throws -> [Set<Event>] {
        var wal = wal
        var scanner = WALScanner(start: wal.start, watched: watched, segmentSize: LSN(wal.segmentSize))
        var fed = 0
        return try records.map { record in
            wal.append(record)
            defer { fed = wal.bytes.count }
            return try scanner.feed(wal.bytes[fed...], at: wal.start + LSN(fed))
        }
    }

    /// Feeds the whole of `wal` from `start` in pieces of `chunk` bytes; every event, in order.
    static func events(_ wal: WALBuilder, chunk: Int, from start: LSN? = nil) throws -> [Event] {
        let first = start ?? wal.start
        var scanner = WALScanner(start: first, watched: watched, segmentSize: LSN(wal.segmentSize))
        var out: [Event] = []
        var offset = Int(first - wal.start)
        while offset < wal.bytes.count {
            let piece = wal.bytes[offset..<min(offset + chunk, wal.bytes.count)]
            out += try scanner.feed(piece, at: wal.start + LSN(offset)).sorted { "\($0)" < "\($1)" }
            offset += piece.count
        }
        return out
    }

    @Test("an outbox insert wakes at its transaction's commit, a stream event alone as a log commit; others never")
    func commitsOfWatchedInserts() throws {
        let events = try Self.eventsPerRecord([
            WALBuilder.heapInsert(xid: 700, database: 5, relation: 16_400),
            WALBuilder.heapInsert(xid: 701, database: 5, relation: 16_410),
            WALBuilder.heapInsert(xid: 702, database: 5, relation: 99),  // another table
            WALBuilder.heapInsert(xid: 703, database: 6, relation: 16_400),  // another database's outbox
            WALBuilder.end(xid: 702), WALBuilder.end(xid: 703), WALBuilder.end(xid: 701), WALBuilder.end(xid: 700),
        ])
        #expect(events == [[], [], [], [], [], [], [.logCommitted], [.outboxCommitted]])
    }

    @Test("an aborted writer wakes nothing, and no later commit wakes for it")
    func abortedWriter() throws {
        let events = try Self.eventsPerRecord([
            WALBuilder.heapInsert(xid: 710, database: 5, relation: 16_400),
            WALBuilder.end(xid: 710, commit: false),
            WALBuilder.end(xid: 710),
            WALBuilder.end(xid: 711),
        ])
        #expect(events == [[], [], [], []])
    }

    @Test("an insert made in a subtransaction wakes at its top transaction's commit, which lists it")
    func subtransactionInsert() throws {
        let events = try Self.eventsPerRecord([
            WALBuilder.heapInsert(xid: 801, database: 5, relation: 16_400),
            WALBuilder.end(xid: 800, subtransactions: [799, 801]),
        ])
        #expect(events == [[], [.outboxCommitted]])
    }

    @Test("the same events whether the stream arrives whole, a byte at a time, or in pieces that cut records and pages")
    func anyCutting() throws {
        var wal = WALBuilder()
        // Where each commit ends, and what it wakes: a feed that completes it must say so.
        var commits: [(end: LSN, event: Event)] = []
        for i in 0..<12 {
            // Records of every size, a full-page image among them, so that headers and records cross pages.
            wal.append(WALBuilder.other(size: 1_000 + 1_731 * i))
            let relation: UInt32 = i.isMultiple(of: 3) ? 16_410 : 16_400
            wal.append(WALBuilder.heapInsert(xid: 900 + UInt32(i), database: 5, relation: relation,
                                             image: i == 5 ? 8_000 : 0))
            wal.append(WALBuilder.end(xid: 900 + UInt32(i)))
            commits.append((wal.end, i.isMultiple(of: 3) ? .logCommitted : .outboxCommitted))
        }
        #expect(wal.bytes.count > 10 * WALBuilder.page)
        for chunk in [1, 7, 24, 1_000, 8_192, 100_000] {
            var scanner = WALScanner(start: wal.start, watched: Self.watched)
            var offset = 0
            while offset < wal.bytes.count {
                let piece = wal.bytes[offset..<min(offset + chunk, wal.bytes.count)]
                let from = wal.start + LSN(offset), to = from + LSN(piece.count)
                let expected = Set(commits.filter { $0.end > from && $0.end <= to }.map(\.event))
                let events = try scanner.feed(piece, at: from)
                #expect(events == expected, "pieces of \(chunk) bytes, the one at \(from.walText)")
                offset += piece.count
            }
        }
    }

    @Test("a stream that begins on a page holding the end of an earlier record finds the first record after it")
    func startsMidRecord() throws {
        var wal = WALBuilder()
        wal.append(WALBuilder.other(size: 20_000))  // spans the second and third pages whole
        wal.append(WALBuilder.heapInsert(xid: 950, database: 5, relation: 16_400))
        wal.append(WALBuilder.end(xid: 950))
        for page in 1...2 {
            let events = try Self.events(wal, chunk: 500, from: wal.start + LSN(page * WALBuilder.page))
            #expect(events == [.outboxCommitted], "from page \(page)")
        }
    }

    @Test("a segment's long page header is skipped as a short one is")
    func segmentBoundary() throws {
        var wal = WALBuilder(segmentSize: 4 * WALBuilder.page)
        var expected: [Event] = []
        for i in 0..<8 {
            wal.append(WALBuilder.other(size: 5_000))
            wal.append(WALBuilder.heapInsert(xid: 1_000 + UInt32(i), database: 5, relation: 16_400))
            wal.append(WALBuilder.end(xid: 1_000 + UInt32(i)))
            expected.append(.outboxCommitted)
        }
        #expect(wal.bytes.count > 4 * WALBuilder.page, "past the first segment")
        #expect(try Self.events(wal, chunk: 3_000) == expected)
    }

    @Test("""
        a relation file created in the watched database is reported, and inserts into it wake until the watched \
        files are read again
        """)
    func relationFileCreated() throws {
        var wal = WALBuilder()
        var scanner = WALScanner(start: wal.start, watched: Self.watched)
        var fed = 0
        func feed(_ record: [UInt8]) throws -> Set<Event> {
            wal.append(record)
            defer { fed = wal.bytes.count }
            return try scanner.feed(wal.bytes[fed...], at: wal.start + LSN(fed))
        }
        // TRUNCATE delivery_outbox (transaction 40) gives it file 20,001; another database's file is no concern.
        #expect(try feed(WALBuilder.fileCreated(database: 6, relation: 20_000, xid: 39)) == [])
        #expect(try feed(WALBuilder.fileCreated(database: 5, relation: 20_001, xid: 40)) == [.relationsChanged])
        #expect(try feed(WALBuilder.end(xid: 39)) == [])
        #expect(try feed(WALBuilder.end(xid: 40)) == [])
        // A writer's insert into the new file before the caller has read it again wakes for both tables.
        #expect(try feed(WALBuilder.heapInsert(xid: 41, database: 5, relation: 20_001)) == [])
        #expect(try feed(WALBuilder.end(xid: 41)) == [.outboxCommitted, .logCommitted])
        // Once read again, the new file is the outbox's and nothing else.
        scanner.watch(.init(database: 5, outbox: 20_001, log: 16_410))
        #expect(try feed(WALBuilder.heapInsert(xid: 42, database: 5, relation: 20_001)) == [])
        #expect(try feed(WALBuilder.end(xid: 42)) == [.outboxCommitted])
    }

    @Test("what it cannot read is a failure, never a guess: another version's pages, a gap, a broken record")
    func failures() throws {
        var other = WALBuilder()
        other.magic = 0xD10D  // PostgreSQL 14
        other.append(WALBuilder.end(xid: 1))
        #expect(throws: WALScanner.Failure.unknownPageMagic(0xD10D, at: other.start)) {
            _ = try Self.events(other, chunk: 100)
        }
        var wal = WALBuilder()
        wal.append(WALBuilder.end(xid: 1))
        var scanner = WALScanner(start: wal.start, watched: Self.watched)
        #expect(throws: WALScanner.Failure.gap(expected: wal.start, received: wal.start + 8)) {
            _ = try scanner.feed(wal.bytes[8...], at: wal.start + 8)
        }
        var broken = WALBuilder()
        broken.append([UInt8](repeating: 0, count: 24))  // a record of length 0
        #expect(throws: WALScanner.Failure.brokenRecord(at: broken.start + 40)) {
            _ = try Self.events(broken, chunk: 100)
        }
    }

    @Test("LSNs read and write as PostgreSQL prints them")
    func lsnText() {
        #expect(LSN(walText: "16/B374D848") == 0x16_B374_D848)
        #expect(LSN(0x16_B374_D848).walText == "16/B374D848")
        #expect(LSN(walText: "nonsense") == nil)
    }
}
