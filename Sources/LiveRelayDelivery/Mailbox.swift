import LiveRelayPostgres
import Synchronization

/// Items put by many tasks and taken together by one: whatever arrived while the taker was busy comes in one go.
final class Mailbox<Item: Sendable>: Sendable {
    private let state = Mutex<(items: [Item], finished: Bool)>(([], false))
    private let bell = Doorbell()

    func put(_ item: Item) {
        state.withLock { $0.items.append(item) }
        bell.ring()
    }

    /// No more items will come: `takeAll` returns nil once the box is empty.
    func finish() {
        state.withLock { $0.finished = true }
        bell.ring()
    }

    /// Everything put since the last call, waiting for at least one item; nil when finished and empty.
    func takeAll() async -> [Item]? {
        while true {
            let (items, finished) = state.withLock { state in
                defer { state.items = [] }
                return (state.items, state.finished)
            }
            if !items.isEmpty { return items }
            if finished || Task.isCancelled { return nil }
            await bell.wait(timeout: .seconds(1))
        }
    }
}
