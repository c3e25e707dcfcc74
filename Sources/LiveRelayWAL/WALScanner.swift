/// A byte position in PostgreSQL's write-ahead log.
public typealias LSN = UInt64

/// Reads the write-ahead log as a physical replication stream sends it, and says when a transaction that inserted
/// into the watched tables commits: the relay's wake-up, without any work in the writer's transaction.
///
/// A value, fed bytes and giving events: no connection, no clock. It keeps the bytes of an unfinished record, the
/// transactions (and subtransactions) that inserted rows and have not ended, and where the next record starts. It
/// begins at a page boundary, finds the first record that starts on that page, and from there reads every record's
/// header, skipping the page headers between them. What it cannot read (a page from an unknown PostgreSQL version,
/// a record whose headers do not add up) is a `Failure`: the caller falls back to another wake-up.
public struct WALScanner: Sendable {
    public enum Event: Hashable, Sendable {
        /// A transaction that inserted into the delivery outbox committed.
        case outboxCommitted
        /// A transaction that inserted into the broadcast log committed.
        case logCommitted
        /// A relation file was created in the watched database: the watched tables may have new relfilenodes
        /// (TRUNCATE, VACUUM FULL); the caller reads them again once the creating transaction has committed
        /// (`watch(_:)`). Until then an insert into any file created since counts as one into both watched tables.
        case relationsChanged
    }

    public enum Failure: Error, Equatable, CustomStringConvertible {
        case unknownPageMagic(UInt16, at: LSN)
        case unexpectedPageAddress(LSN, at: LSN)
        case brokenRecord(at: LSN)
        case gap(expected: LSN, received: LSN)

        public var description: String {
            switch self {
            case let .unknownPageMagic(magic, lsn):
                "a WAL page at \(lsn.walText) has magic 0x\(String(magic, radix: 16)), of no PostgreSQL version 15-17"
            case let .unexpectedPageAddress(address, lsn):
                "the WAL page at \(lsn.walText) says it is at \(address.walText)"
            case let .brokenRecord(lsn): "the WAL record at \(lsn.walText) could not be read"
            case let .gap(expected, received):
                "the WAL stream jumped from \(expected.walText) to \(received.walText)"
            }
        }
    }

    /// The relations watched, as WAL names them.
    public struct Watched: Equatable, Sendable {
        public var database: UInt32
        public var outbox: UInt32
        public var log: UInt32

        public init(database: UInt32, outbox: UInt32, log: UInt32) {
            self.database = database
            self.outbox = outbox
            self.log = log
        }
    }

    /// The page magic numbers of PostgreSQL 15, 16 and 17, whose record layout this scanner reads.
    public static let knownPageMagics: Set<UInt16> = [0xD110, 0xD113, 0xD116]
    static let pageSize: LSN = 8192
    static let largestRecord = 64 << 20

    public private(set) var watched: Watched
    let segmentSize: LSN
    private var buffer: [UInt8] = []
    private var bufferStart: LSN
    /// Where the next record starts; nil until the first record boundary is found, from `seeking`.
    private var next: LSN?
    private var seeking: LSN
    private var outboxWriters: Set<UInt32> = []
    private var logWriters: Set<UInt32> = []
    /// Relation files created in the watched database since the last `watch(_:)`.
    private var createdFiles: Set<UInt32> = []
    /// At most this many open writers are followed; beyond, the scanner wakes for all of them and starts afresh.
    static let writersFollowed = 100_000

    /// - Parameter start: a page boundary: where the stream begins.
    public init(start: LSN, watched: Watched, segmentSize: LSN = 16 << 20) {
        precondition(start % Self.pageSize == 0, "the stream must start at a page boundary")
        self.watched = watched
        self.segmentSize = segmentSize
        bufferStart = start
        seeking = start
    }

    /// The watched tables' files, read again after `relationsChanged`.
    public mutating func watch(_ watched: Watched) {
        self.watched = watched
        createdFiles = []
    }

    /// Everything received up to here (the stream's next message starts here).
    public var received: LSN { bufferStart + LSN(buffer.count) }

    /// The stream's next bytes, which start at `lsn`; the events of the records they complete, each once.
    public mutating func feed(_ bytes: some Collection<UInt8>, at lsn: LSN) throws(Failure) -> Set<Event> {
        guard lsn == received else { throw .gap(expected: received, received: lsn) }
        buffer.append(contentsOf: bytes)
        var events: Set<Event> = []
        if next == nil { try seek() }
        while let start = next, let found = try read(at: start) {
            next = found.end
            if let record = found.record { events.formUnion(examine(record)) }
        }
        let keep = min(next ?? seeking, received)
        if keep > bufferStart {
            buffer.removeFirst(Int(keep - bufferStart))
            bufferStart = keep
        }
        return events
    }

    // MARK: Pages

    /// The size of the page header at `page` (a page boundary); nil when that header is not received yet.
    private func pageHeader(at page: LSN) throws(Failure) -> (size: LSN, info: UInt16, remaining: LSN)? {
        guard let header = bytes(at: page, count: 24) else { return nil }
        let magic = header.loadLE(UInt16.self, at: 0)
        guard Self.knownPageMagics.contains(magic) else { throw .unknownPageMagic(magic, at: page) }
        let address = header.loadLE(UInt64.self, at: 8)
        guard address == page else { throw .unexpectedPageAddress(address, at: page) }
        let info = header.loadLE(UInt16.self, at: 2)
        return (info & 0x0002 != 0 ? 40 : 24, info, LSN(header.loadLE(UInt32.self, at: 16)))
    }

    /// Finds the first record that starts on a page, from `seeking` on.
    private mutating func seek() throws(Failure) {
        while let header = try pageHeader(at: seeking) {
            // XLP_FIRST_IS_CONTRECORD: the page begins with the rest of a record that started before it.
            let rest = header.info & 0x0001 != 0 ? header.remaining : 0
            if header.size + rest < Self.pageSize {
                next = seeking + header.size + Self.aligned(rest)
                return
            }
            seeking += Self.pageSize
        }
    }

    // MARK: Records

    /// `count` record bytes from `lsn` on, skipping page headers, of which the first `copied` are returned; and where
    /// they end. Nil until all of them are received.
    private func recordBytes(from lsn: LSN, count: Int, copied: Int) throws(Failure) -> (bytes: [UInt8], end: LSN)? {
        var out: [UInt8] = []
        out.reserveCapacity(copied)
        var at = lsn, left = count
        while left > 0 {
            if at % Self.pageSize == 0 {
                guard let header = try pageHeader(at: at) else { return nil }
                at += header.size
            }
            let take = min(left, Int(Self.pageSize - at % Self.pageSize))
            guard at + LSN(take) <= received else { return nil }
            let copy = min(take, copied - out.count)
            if copy > 0 { out += buffer[Int(at - bufferStart)..<Int(at - bufferStart) + copy] }
            at += LSN(take)
            left -= take
        }
        return (out, at)
    }

    /// The record starting at `start` (nil when it is of no interest), and where the one after it starts; nil until
    /// it is all received. Only what the scanner looks into is copied (`WALRecord.Kind.bytesRead`).
    private func read(at start: LSN) throws(Failure) -> (record: WALRecord?, end: LSN)? {
        let size = WALRecord.headerSize
        guard let header = try recordBytes(from: start, count: size, copied: size)?.bytes else { return nil }
        let total = Int(header.loadLE(UInt32.self, at: 0))
        guard total >= size, total <= Self.largestRecord else { throw .brokenRecord(at: start) }
        let kind = WALRecord.Kind(rmid: header[17], info: header[16])
        let wanted = kind.bytesRead(of: total)
        guard let whole = try recordBytes(from: start, count: total, copied: wanted) else { return nil }
        if kind == .segmentSwitch { return (nil, (whole.end + segmentSize - 1) / segmentSize * segmentSize) }
        guard wanted > 0 else { return (nil, Self.aligned(whole.end)) }
        guard let record = WALRecord(whole.bytes, whole: wanted == total) else { throw .brokenRecord(at: start) }
        return (record, Self.aligned(whole.end))
    }

    private mutating func examine(_ record: WALRecord) -> Set<Event> {
        switch record.kind {
        case .insert:
            guard let file = record.firstBlock, file.database == watched.database else { return [] }
            let created = createdFiles.contains(file.relation)
            if file.relation == watched.outbox || created { outboxWriters.insert(record.xid) }
            if file.relation == watched.log || created { logWriters.insert(record.xid) }
            if outboxWriters.count + logWriters.count > Self.writersFollowed {
                defer { outboxWriters = []; logWriters = [] }
                return [.outboxCommitted, .logCommitted]
            }
            return []
        case .transactionEnd:
            return ended(record)
        case .fileCreated:  // RelFileNode, then the fork
            guard record.mainData.count >= 12, record.mainData.loadLE(UInt32.self, at: 4) == watched.database
            else { return [] }
            createdFiles.insert(record.mainData.loadLE(UInt32.self, at: 8))
            return [.relationsChanged]
        case .segmentSwitch, .other:
            return []
        }
    }

    /// A transaction's commit or abort record: its writers (it and its subtransactions) are done.
    private mutating func ended(_ record: WALRecord) -> Set<Event> {
        let operation = record.info & 0x70
        switch operation {
        case 0x00, 0x20:  // XLOG_XACT_COMMIT, XLOG_XACT_ABORT
            var xids = [record.xid]
            xids += Self.subtransactions(of: record)
            var events: Set<Event> = []
            for xid in xids {
                if outboxWriters.remove(xid) != nil { events.insert(.outboxCommitted) }
                if logWriters.remove(xid) != nil { events.insert(.logCommitted) }
            }
            return operation == 0x00 ? events : []
        case 0x30:  // XLOG_XACT_COMMIT_PREPARED: its transaction is named deeper in; wake for every open writer
            var events: Set<Event> = []
            if !outboxWriters.isEmpty { events.insert(.outboxCommitted) }
            if !logWriters.isEmpty { events.insert(.logCommitted) }
            outboxWriters = []
            logWriters = []
            return events
        default:
            return []
        }
    }

    /// The subtransactions a commit or abort record lists: after its time, its `xinfo` (when XLOG_XACT_HAS_INFO),
    /// the database (XACT_XINFO_HAS_DBINFO) and then the count and ids (XACT_XINFO_HAS_SUBXACTS).
    static func subtransactions(of record: WALRecord) -> [UInt32] {
        let data = record.mainData
        guard record.info & 0x80 != 0, data.count >= 12 else { return [] }
        let xinfo = data.loadLE(UInt32.self, at: 8)
        var position = 12
        if xinfo & 0x01 != 0 { position += 8 }
        guard xinfo & 0x02 != 0, data.count >= position + 4 else { return [] }
        let count = Int(data.loadLE(Int32.self, at: position))
        position += 4
        guard count >= 0, data.count >= position + 4 * count else { return [] }
        return (0..<count).map { data.loadLE(UInt32.self, at: position + 4 * $0) }
    }

    // MARK: Bytes

    private func bytes(at lsn: LSN, count: Int) -> [UInt8]? {
        guard lsn >= bufferStart, lsn + LSN(count) <= received else { return nil }
        let offset = Int(lsn - bufferStart)
        return Array(buffer[offset..<(offset + count)])
    }

    static func aligned(_ lsn: LSN) -> LSN { (lsn + 7) & ~7 }
}

extension LSN {
    /// As PostgreSQL writes it: `16/B374D848`.
    public var walText: String { "\(String(self >> 32, radix: 16, uppercase: true))/"
        + String(self & 0xFFFF_FFFF, radix: 16, uppercase: true) }

    /// Reads PostgreSQL's `16/B374D848`.
    public init?(walText: String) {
        let parts = walText.split(separator: "/")
        guard parts.count == 2, let high = UInt64(parts[0], radix: 16), let low = UInt64(parts[1], radix: 16)
        else { return nil }
        self = high << 32 | low
    }
}
