import Testing
@testable import LiveRelayHTTP

/// The stream's memory of the broadcast channels it found: which names a new stream still asks the database about.
@Suite("Known channel names")
struct KnownChannelNamesTests {
    static let start = ContinuousClock.now

    @Test("a name found is not asked again until its lifetime is over; a name not found is asked every time")
    func lifetime() {
        var known = KnownChannelNames(lifetime: .seconds(5))
        #expect(known.unknown(among: ["a", "b"], at: Self.start) == ["a", "b"])
        known.found(["a"], at: Self.start)
        // "b" was not found: the next stream asks again (it may have been created since).
        #expect(known.unknown(among: ["b", "a"], at: Self.start + .seconds(1)) == ["b"])
        #expect(known.unknown(among: ["a"], at: Self.start + .milliseconds(4999)).isEmpty)
        #expect(known.unknown(among: ["a"], at: Self.start + .seconds(5)) == ["a"])
        known.found(["a"], at: Self.start + .seconds(5))
        #expect(known.unknown(among: ["a"], at: Self.start + .seconds(9)).isEmpty)
    }

    @Test("past its capacity the expired names go first, then all of them; nothing is kept beyond the capacity")
    func capacity() {
        var known = KnownChannelNames(lifetime: .seconds(5), capacity: 3)
        known.found(["old"], at: Self.start)
        known.found(["x", "y"], at: Self.start + .seconds(3))
        // Full: "old" has expired and makes room; "x" and "y" stay.
        known.found(["z"], at: Self.start + .seconds(6))
        #expect(Set(known.foundAt.keys) == ["x", "y", "z"])
        // Full of names still alive: all go, and the new one is kept.
        known.found(["w"], at: Self.start + .seconds(7))
        #expect(Set(known.foundAt.keys) == ["w"])
        #expect(known.unknown(among: ["x", "w"], at: Self.start + .seconds(7)) == ["x"])
        known.found(["1", "2", "3", "4"], at: Self.start + .seconds(8))
        #expect(known.foundAt.count == 3)
    }
}
