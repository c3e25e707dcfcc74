/// How many integration tests run their relays at once. Swift Testing starts every test side by side; a hundred
/// relays, simulators and databases starting together on two cores made deadlines that measure the relay (a 5 s
/// outcome wait, a push within seconds) measure the queue for the CPU instead. A test's time limit counts its wait
/// for a slot, so the limits of the suites that take one (5 minutes) stay above the length of the whole run: under
/// 90 s on a quick hour, 158 s on the slowest seen, where a 2-minute limit ran out while its test still waited.
actor TestSlots {
    static let shared = TestSlots(count: 12)

    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(count: Int) { free = count }

    /// Runs `body` in a slot, waiting for one first.
    nonisolated func run<T: Sendable>(_ body: () async throws -> T) async rethrows -> T {
        await acquire()
        do {
            let value = try await body()
            await release()
            return value
        } catch {
            await release()
            throw error
        }
    }

    private func acquire() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    private func release() {
        if waiting.isEmpty {
            free += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
