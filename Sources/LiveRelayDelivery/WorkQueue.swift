import Synchronization

/// Items handed out one at a time to tasks working side by side, each item to exactly one of them.
final class WorkQueue<Item: Sendable>: Sendable {
    private let state: Mutex<(items: [Item], next: Int)>

    init(_ items: [Item]) {
        state = Mutex((items, 0))
    }

    /// The next item nobody has taken, or nil when all are taken.
    func next() -> Item? {
        state.withLock { state in
            guard state.next < state.items.count else { return nil }
            defer { state.next += 1 }
            return state.items[state.next]
        }
    }
}
