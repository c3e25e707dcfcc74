@testable import LiveRelayWAL

/// Writes WAL as PostgreSQL 15 lays it out, for the scanner's tests: 8 kB pages, each with its header (long at a
/// segment's start), records at 8-byte boundaries, a record that crosses a page continued after the next header.
struct WALBuilder {
    static let page = 8192
    let start: LSN
    let segmentSize: Int
    var magic: UInt16 = 0xD110
    private(set) var bytes: [UInt8] = []
    var end: LSN { start + LSN(bytes.count) }

    init(start: LSN = 0x0300_0000, segmentSize: Int = 16 << 20) {
        self.start = start
        self.segmentSize = segmentSize
    }

    /// Appends a record; returns where it starts.
    @discardableResult
    mutating func append(_ record: [UInt8]) -> LSN {
        while end % 8 != 0 { bytes.append(0) }
        if end % LSN(Self.page) == 0 { pageHeader(remaining: 0) }
        let at = end
        var rest = record[...]
        while !rest.isEmpty {
            if end % LSN(Self.page) == 0 { pageHeader(remaining: rest.count) }
            let room = Self.page - Int(end % LSN(Self.page))
            bytes += rest.prefix(room)
            rest = rest.dropFirst(room)
        }
        return at
    }

    private mutating func pageHeader(remaining: Int) {
        let address = end
        let long = address % LSN(segmentSize) == 0
        var info: UInt16 = remaining > 0 ? 0x0001 : 0
        if long { info |= 0x0002 }
        put(magic)
        put(info)
        put(UInt32(1))
        put(UInt64(address))
        put(UInt32(remaining))
        put(UInt32(0))
        if long {
            put(UInt64(42))
            put(UInt32(segmentSize))
            put(UInt32(Self.page))
        }
    }

    private mutating func put<T: FixedWidthInteger>(_ value: T) { bytes += WALBuilder.le(value) }

    static func le<T: FixedWidthInteger>(_ value: T) -> [UInt8] {
        (0..<MemoryLayout<T>.size).map { UInt8(truncatingIfNeeded: value >> (8 * $0)) }
    }

    // MARK: Records

    /// A record: its header, then `headers` (block references, the main data's header), then `payload`.
    static func record(xid: UInt32, rmid: UInt8, info: UInt8, headers: [UInt8], payload: [UInt8]) -> [UInt8] {
        let total = 24 + headers.count + payload.count
        return le(UInt32(total)) + le(xid) + le(UInt64(0)) + [info, rmid, 0, 0] + le(UInt32(0)) + headers + payload
    }

    static func mainDataHeader(_ count: Int) -> [UInt8] {
        count < 256 ? [255, UInt8(count)] : [254] + le(UInt32(count))
    }

    /// A heap insert of a `tuple`-byte tuple into relation `relation` of `database`; with a full-page image when
    /// `image` (the first change of the page after a checkpoint).
    static func heapInsert(xid: UInt32, database: UInt32, relation: UInt32, tuple: Int = 40,
                           image: Int = 0) -> [UInt8] {
        var block: [UInt8] = [0, image > 0 ? 0x10 : 0x00] + le(UInt16(tuple))
        if image > 0 { block += le(UInt16(image)) + le(UInt16(0)) + [0x02] }
        block += le(UInt32(1663)) + le(database) + le(relation) + le(UInt32(7))
        let main: [UInt8] = le(UInt16(3)) + [0]
        return record(xid: xid, rmid: 10, info: 0x00, headers: block + mainDataHeader(main.count),
                      payload: [UInt8](repeating: 0xAB, count: image + tuple) + main)
    }

    /// A commit (or an abort) of `xid`, listing its subtransactions.
    static func end(xid: UInt32, commit: Bool = true, subtransactions: [UInt32] = []) -> [UInt8] {
        var main = le(Int64(123_456))
        var info: UInt8 = commit ? 0x00 : 0x20
        if !subtransactions.isEmpty {
            info |= 0x80
            main += le(UInt32(0x03)) + le(UInt32(5)) + le(UInt32(1663))  // HAS_DBINFO | HAS_SUBXACTS
            main += le(Int32(subtransactions.count)) + subtransactions.flatMap { le($0) }
        }
        return record(xid: xid, rmid: 1, info: info, headers: mainDataHeader(main.count), payload: main)
    }

    /// A record the scanner has no interest in (a B-tree insert, say), of `size` bytes in all.
    static func other(size: Int) -> [UInt8] {
        let main = [UInt8](repeating: 0x5A, count: size - 24 - (size - 24 < 256 + 2 ? 2 : 5))
        return record(xid: 9, rmid: 11, info: 0x00, headers: mainDataHeader(main.count), payload: main)
    }

    /// A relation file created (TRUNCATE, VACUUM FULL, CREATE TABLE) in `database`.
    static func fileCreated(database: UInt32, relation: UInt32, xid: UInt32) -> [UInt8] {
        let main = le(UInt32(1663)) + le(database) + le(relation) + le(Int32(0))
        return record(xid: xid, rmid: 2, info: 0x10, headers: mainDataHeader(main.count), payload: main)
    }
}
