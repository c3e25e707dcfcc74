/// What a part of the relay that keeps reconnecting says while PostgreSQL is away (`runReconnecting`): a warning for
/// the first failure, for a new reason, and once a minute while the same one lasts; the other retries at debug level;
/// and, once connected again, how long it took. Before, every retry of every part warned: with the database down, the
/// relay's eight sessions wrote four lines a second, each the same.
struct OutageLog {
    enum Level: Equatable { case warning, debug }

    /// How often an unchanged reason is said again.
    static let repeatEvery: Duration = .seconds(60)

    /// Attempts failed since the last connection.
    private(set) var failures = 0
    private var began: ContinuousClock.Instant?
    private var said: (reason: String, at: ContinuousClock.Instant)?

    /// A failed attempt: at which level to say so.
    mutating func failed(_ reason: String, at now: ContinuousClock.Instant) -> Level {
        failures += 1
        if began == nil { began = now }
        if let said, said.reason == reason, now - said.at < Self.repeatEvery { return .debug }
        said = (reason, now)
        return .warning
    }

    /// A connection made: the failed attempts and the time since the first of them, when there were any.
    mutating func connected(at now: ContinuousClock.Instant) -> (failures: Int, lasted: Duration)? {
        defer { self = OutageLog() }
        guard failures > 0, let began else { return nil }
        return (failures, now - began)
    }

    /// How long the failures have lasted so far.
    func lasting(at now: ContinuousClock.Instant) -> Duration { began.map { now - $0 } ?? .zero }
}
