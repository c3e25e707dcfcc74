/// The broadcast channels the database was seen to have, each for a few seconds after it was found: what lets a
/// storm of streams following one channel (apps reconnecting after a relay's restart, 10,000 at once) ask the database
/// once rather than once a stream whether that channel exists (the answer is only the stream's hint
/// `: no channel is named … yet`). A value type with no I/O and no clock of its own; `StreamRoutes` holds it in a
/// lock.
///
/// Only names found are kept: a name the database did not have is asked again by the next stream, so a channel created
/// just after is never hinted missing. A channel deleted just after it was found is not hinted missing for at most
/// `lifetime`, which costs a stream nothing but the hint (its events come if one is created, either way).
struct KnownChannelNames {
    static let defaultLifetime: Duration = .seconds(5)
    static let defaultCapacity = 4096

    let lifetime: Duration
    /// The most names kept: past it, the expired go, and if that is not enough, all of them (the next streams ask).
    let capacity: Int
    /// When each kept name was found.
    private(set) var foundAt: [String: ContinuousClock.Instant] = [:]

    init(lifetime: Duration = Self.defaultLifetime, capacity: Int = Self.defaultCapacity) {
        self.lifetime = lifetime
        self.capacity = capacity
    }

    /// The names among `names` not known at `now`, in the order given: those to ask the database about.
    func unknown(among names: [String], at now: ContinuousClock.Instant) -> [String] {
        names.filter { name in foundAt[name].map { now - $0 >= lifetime } ?? true }
    }

    /// Keeps `names` as found at `now` (the database's answer to a question asked at `now` or before).
    mutating func found(_ names: some Collection<String>, at now: ContinuousClock.Instant) {
        guard !names.isEmpty else { return }
        if foundAt.count + names.count > capacity {
            foundAt = foundAt.filter { now - $0.value < lifetime }
            if foundAt.count + names.count > capacity { foundAt.removeAll(keepingCapacity: true) }
        }
        for name in names.prefix(capacity) { foundAt[name] = now }
    }
}
