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
        if bytes.withContiguousStorageIfAvailable({ buffer.append(contentsOf: $0) }) == nil {
            buffer.append(contentsOf: bytes)
        }
        // Read in place from a second reference to the buffer (no copy: it is not written while it is read). The
        // reference ends with this block, before the buffer is trimmed: held longer, it would make the trim copy
        // the whole buffer.
        let scanned: Result<Set<Event>, Failure>
        do {
            let held = buffer
            scanned = held.withUnsafeBytes { raw in
                Result { () throws(Failure) in try scan(WALBytes(raw: raw, start: bufferStart)) }
            }
        }
        let keep = min(next ?? seeking, received)
        if keep > bufferStart {
            buffer.removeFirst(Int(keep - bufferStart))
            bufferStart = keep
        }
        return try scanned.get()
    }

    /// Every record `bytes` completes, from `next` on.
    private mutating func scan(_ bytes: WALBytes) throws(Failure) -> Set<Event> {
        var events: Set<Event> = []
        if next == nil { try seek(in: bytes) }
        while let start = next, let found = try read(at: start, in: bytes) {
            next = found.end
            if let record = found.record { events.formUnion(examine(record)) }
        }
        return events
    }

    // MARK: Pages

    /// The size of the page header at `page` (a page boundary); nil when that header is not received yet.
    private func pageHeader(at page: LSN, in bytes: WALBytes) throws(Failure)
        -> (size: LSN, info: UInt16, remaining: LSN)? {
        guard bytes.holds(page, count: 24) else { return nil }
        let magic = bytes.load(UInt16.self, at: page)
        guard Self.knownPageMagics.contains(magic) else { throw .unknownPageMagic(magic, at: page) }
        let address = bytes.load(UInt64.self, at: page + 8)
        guard address == page else { throw .unexpectedPageAddress(address, at: page) }
        let info = bytes.load(UInt16.self, at: page + 2)
        return (info & 0x0002 != 0 ? 40 : 24, info, LSN(bytes.load(UInt32.self, at: page + 16)))
    }

    /// Finds the first record that starts on a page, from `seeking` on.
    private mutating func seek(in bytes: WALBytes) throws(Failure) {
        while let header = try pageHeader(at: seeking, in: bytes) {
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

    /// Where the `count` record bytes from `lsn` on end, skipping page headers; nil until all of them are received.
    private func end(from lsn: LSN, count: Int, in bytes: WALBytes) throws(Failure) -> LSN? {
        var at = lsn, left = count
        while left > 0 {
            if at % Self.pageSize == 0 {
                guard let header = try pageHeader(at: at, in: bytes) else { return nil }
                at += header.size
            }
            let take = min(left, Int(Self.pageSize - at % Self.pageSize))
            at += LSN(take)
            left -= take
        }
        return at <= bytes.end ? at : nil
    }

    /// The first `count` record bytes from `lsn` on, which `end` found received, without the page headers between.
    private func copy(from lsn: LSN, count: Int, in bytes: WALBytes) throws(Failure) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(count)
        var at = lsn
        while out.count < count {
            if at % Self.pageSize == 0 { at += try pageHeader(at: at, in: bytes)?.size ?? 0 }  // received: see `end`
            let take = min(count - out.count, Int(Self.pageSize - at % Self.pageSize))
            out += bytes.bytes(at: at, count: take)
            at += LSN(take)
        }
        return out
    }

    /// The record starting at `start` (nil when it is of no interest), and where the one after it starts; nil until
    /// it is all received. Only what the scanner looks into is read (`WALRecord.Kind.bytesRead`), in place when it
    /// lies on one page, as nearly every record's header and first block reference do.
    private func read(at start: LSN, in bytes: WALBytes) throws(Failure) -> (record: WALRecord?, end: LSN)? {
        let size = WALRecord.headerSize
        let offset = start % Self.pageSize
        let onOnePage = { (count: Int) in offset != 0 && offset + LSN(count) <= Self.pageSize }
        let total: Int, kind: WALRecord.Kind
        if onOnePage(size) {
            guard bytes.holds(start, count: size) else { return nil }
            total = Int(bytes.load(UInt32.self, at: start))
            kind = WALRecord.Kind(rmid: bytes.load(UInt8.self, at: start + 17),
                                  info: bytes.load(UInt8.self, at: start + 16))
        } else {
            guard try end(from: start, count: size, in: bytes) != nil else { return nil }
            let header = try copy(from: start, count: size, in: bytes)
            total = Int(header.loadLE(UInt32.self, at: 0))
            kind = WALRecord.Kind(rmid: header[17], info: header[16])
        }
        guard total >= size, total <= Self.largestRecord else { throw .brokenRecord(at: start) }
        guard let recordEnd = try end(from: start, count: total, in: bytes) else { return nil }
        if kind == .segmentSwitch { return (nil, (recordEnd + segmentSize - 1) / segmentSize * segmentSize) }
        let wanted = kind.bytesRead(of: total)
        guard wanted > 0 else { return (nil, Self.aligned(recordEnd)) }
        let record = onOnePage(wanted)
            ? WALRecord(bytes.bytes(at: start, count: wanted), whole: wanted == total)
            : WALRecord(try copy(from: start, count: wanted, in: bytes), whole: wanted == total)
        guard let record else { throw .brokenRecord(at: start) }
        return (record, Self.aligned(recordEnd))
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
