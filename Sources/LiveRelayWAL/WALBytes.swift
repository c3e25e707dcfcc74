/// The received part of the stream, read in place by log position: no copy, no allocation. The scanner reads every
/// record's header through it (a bulk statement writes hundreds of thousands of records), so this is its hot path.
struct WALBytes {
    let raw: UnsafeRawBufferPointer
    /// The log position of `raw`'s first byte.
    let start: LSN

    var end: LSN { start + LSN(raw.count) }

    /// Whether the `count` bytes from `lsn` on have been received.
    func holds(_ lsn: LSN, count: Int) -> Bool { lsn >= start && lsn + LSN(count) <= end }

    /// A little-endian integer at `lsn`, which `holds`.
    func load<T: FixedWidthInteger>(_: T.Type, at lsn: LSN) -> T {
        T(littleEndian: raw.loadUnaligned(fromByteOffset: Int(lsn - start), as: T.self))
    }

    /// The `count` bytes from `lsn` on, which `holds`, indexed from zero.
    func bytes(at lsn: LSN, count: Int) -> UnsafeRawBufferPointer {
        let offset = Int(lsn - start)
        return UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + count)])
    }
}
