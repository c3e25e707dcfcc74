import Testing
@testable import LiveRelayPostgres

/// What a reconnecting part of the relay says while the database is away, on its own clock.
@Suite("Outage log")
struct OutageLogTests {
    static let start = ContinuousClock.now
    static func at(_ seconds: Double) -> ContinuousClock.Instant { start + .milliseconds(Int64(seconds * 1000)) }

    @Test("the first failure warns; the same reason within a minute is debug; after a minute it warns again")
    func repeats() {
        var log = OutageLog()
        let refused = "cannot connect to PostgreSQL at db:5432: Connection refused"
        #expect(log.failed(refused, at: Self.at(0)) == .warning)
        #expect(log.failed(refused, at: Self.at(2)) == .debug)
        #expect(log.failed(refused, at: Self.at(59.9)) == .debug)
        #expect(log.failed(refused, at: Self.at(60)) == .warning)
        #expect(log.failed(refused, at: Self.at(62)) == .debug)
        #expect(log.failures == 5 && log.lasting(at: Self.at(62)) == .seconds(62))
    }

    @Test("a new reason warns at once")
    func newReason() {
        var log = OutageLog()
        #expect(log.failed("refused", at: Self.at(0)) == .warning)
        #expect(log.failed("the name does not resolve", at: Self.at(1)) == .warning)
        #expect(log.failed("the name does not resolve", at: Self.at(2)) == .debug)
    }

    @Test("connected again: the failed attempts and how long they lasted, once; a later failure warns again")
    func recovery() {
        var log = OutageLog()
        #expect(log.connected(at: Self.at(0)) == nil, "a first connection is no recovery")
        _ = log.failed("refused", at: Self.at(1))
        _ = log.failed("refused", at: Self.at(3))
        let ended = log.connected(at: Self.at(4.5))
        #expect(ended?.failures == 2 && ended?.lasted == .milliseconds(3500))
        #expect(log.connected(at: Self.at(5)) == nil)
        #expect(log.failed("refused", at: Self.at(6)) == .warning)
    }
}
