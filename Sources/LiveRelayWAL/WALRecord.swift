/// One write-ahead log record, read as far as the relay needs: who wrote it (`xid`), which resource manager it belongs
/// to and what it did (`rmid`, `info`), the relation of its first block reference, and its main data.
///
/// The layout is PostgreSQL's (`access/xlogrecord.h`, the same in versions 15 to 17): a 24-byte header, then block
/// headers until the main data's header, then the blocks' images and data, then the main data.
struct WALRecord: Equatable, Sendable {
    /// A relation's file as WAL names it: its database and relfilenode (the tablespace does not matter here).
    struct RelationFile: Hashable, Sendable {
        var database: UInt32
        var relation: UInt32
    }

    var xid: UInt32
    var info: UInt8
    var rmid: UInt8
    var firstBlock: RelationFile?
    var mainData: ArraySlice<UInt8>

    /// What a record is to the scanner, from its resource manager and info byte alone (its header).
    enum Kind: Equatable {
        /// A heap insert or multi-insert (RM_HEAP_ID XLOG_HEAP_INSERT, RM_HEAP2_ID XLOG_HEAP2_MULTI_INSERT): read up to
        /// its first block reference, the relation inserted into.
        case insert
        /// A transaction's commit, abort or prepared commit (RM_XACT_ID): read whole.
        case transactionEnd
        /// A relation file created (RM_SMGR_ID XLOG_SMGR_CREATE): read whole.
        case fileCreated
        /// XLOG_SWITCH (RM_XLOG_ID): the rest of the segment is empty.
        case segmentSwitch
        case other

        init(rmid: UInt8, info: UInt8) {
            switch rmid {
            case 10 where info & 0x70 == 0x00, 9 where info & 0x70 == 0x50: self = .insert
            case 1: self = .transactionEnd
            case 2 where info & 0xF0 == 0x10: self = .fileCreated
            case 0 where info & 0xF0 == 0x40: self = .segmentSwitch
            default: self = .other
            }
        }

        /// How many of a record's `total` bytes the scanner reads.
        func bytesRead(of total: Int) -> Int {
            switch self {
            case .insert: min(total, WALRecord.insertPrefix)
            case .transactionEnd, .fileCreated: total
            case .segmentSwitch, .other: 0
            }
        }
    }

    var kind: Kind { Kind(rmid: rmid, info: info) }

    static let headerSize = 24
    /// How much of an insert is read: its header and first block reference (4 + 5 + 2 + 12 + 4 bytes at most).
    static let insertPrefix = 64

    /// Reads a record: the whole of it (`bytes.count` is its `xl_tot_len`), or, when not `whole`, its first bytes,
    /// up to its first block reference. Nil when its headers do not add up. `bytes` are indexed from zero: an array,
    /// or the received stream read in place.
    init?<Bytes: RandomAccessCollection<UInt8>>(_ bytes: Bytes, whole: Bool = true) where Bytes.Index == Int {
        guard bytes.count >= Self.headerSize else { return nil }
        xid = bytes.loadLE(UInt32.self, at: 4)
        info = bytes[16]
        rmid = bytes[17]
        firstBlock = nil
        var position = Self.headerSize
        var payload = 0
        var mainLength = 0
        var lastRelation: RelationFile?
        while bytes.count - position > payload {
            let id = bytes[position]
            position += 1
            switch id {
            case 255:  // XLR_BLOCK_ID_DATA_SHORT
                guard position + 1 <= bytes.count else { return nil }
                mainLength = Int(bytes[position])
                position += 1
            case 254:  // XLR_BLOCK_ID_DATA_LONG
                guard position + 4 <= bytes.count else { return nil }
                mainLength = Int(bytes.loadLE(UInt32.self, at: position))
                position += 4
            case 253:  // XLR_BLOCK_ID_ORIGIN
                position += 2
                continue
            case 252:  // XLR_BLOCK_ID_TOPLEVEL_XID
                position += 4
                continue
            case 0...32:
                guard position + 3 <= bytes.count else { return nil }
                let forkFlags = bytes[position]
                payload += Int(bytes.loadLE(UInt16.self, at: position + 1))
                position += 3
                if forkFlags & 0x10 != 0 {  // BKPBLOCK_HAS_IMAGE
                    guard position + 5 <= bytes.count else { return nil }
                    payload += Int(bytes.loadLE(UInt16.self, at: position))
                    let imageInfo = bytes[position + 4]
                    position += 5
                    // BKPIMAGE_HAS_HOLE with any compression: the hole's length follows.
                    if imageInfo & 0x01 != 0 && imageInfo & 0x1C != 0 { position += 2 }
                }
                if forkFlags & 0x80 == 0 {  // not BKPBLOCK_SAME_REL: a RelFileNode (tablespace, database, relation)
                    guard position + 12 <= bytes.count else { return nil }
                    lastRelation = RelationFile(database: bytes.loadLE(UInt32.self, at: position + 4),
                                                relation: bytes.loadLE(UInt32.self, at: position + 8))
                    position += 12
                }
                guard lastRelation != nil else { return nil }
                if firstBlock == nil { firstBlock = lastRelation }
                position += 4  // BlockNumber
                if !whole {
                    mainData = []
                    return
                }
                continue
            default:
                return nil
            }
            payload += mainLength
            break
        }
        guard position + payload == bytes.count, mainLength <= payload else { return nil }
        mainData = ArraySlice(bytes[(bytes.count - mainLength)...])
    }
}

extension RandomAccessCollection where Element == UInt8, Index == Int {
    /// A little-endian integer `offset` bytes in (WAL is written in the server's byte order; PostgreSQL's on x86-64
    /// and ARM64 is little-endian, which the scanner checks against each page's magic number).
    func loadLE<T: FixedWidthInteger>(_: T.Type, at offset: Int) -> T {
        var value: T = 0
        for index in 0..<MemoryLayout<T>.size { value |= T(self[startIndex + offset + index]) << (8 * index) }
        return value
    }
}
