import Foundation
import LiveRelayPostgres
import Synchronization

/// The chains a webhook worker has claimed and not yet recorded, and the lanes sending them: at most
/// `lanesPerEndpoint` requests in flight to one endpoint, each lane taking that endpoint's next waiting chain.
///
/// Lanes are per endpoint, so an endpoint that hangs holds only its own lanes and chains; the other endpoints' chains
/// go on being claimed, sent and recorded.
final class WebhookLanes: Sendable {
    typealias Chain = WebhookOutboxStore.Chain
    typealias Row = WebhookOutboxStore.Row

    private struct Endpoint {
        var lanes = 0
        var waiting: [[Row]] = []
        var next = 0

        /// Queues a chain; true when a new lane should start for it (fewer than `limit` run).
        mutating func add(_ rows: [Row], limit: Int) -> Bool {
            waiting.append(rows)
            guard lanes < limit else { return false }
            lanes += 1
            return true
        }
    }
    private struct State {
        var endpoints: [UUID: Endpoint] = [:]
        /// Claimed chains not yet recorded, and how many rows they hold.
        var busy: [Chain: Int] = [:]
        var busyRows = 0
        var stopped = false
    }
    private let state = Mutex(State())
    let lanesPerEndpoint: Int

    init(lanesPerEndpoint: Int) {
        self.lanesPerEndpoint = lanesPerEndpoint
    }

    /// The chains claimed and not yet recorded (the claim leaves them out).
    var busyChains: [Chain] { state.withLock { Array($0.busy.keys) } }

    /// How many claimed rows are not yet recorded.
    var busyRows: Int { state.withLock { $0.busyRows } }

    /// Queues a claimed chain (its rows in order) and returns its endpoint when a new lane should start for it.
    func add(_ rows: [Row]) -> UUID? {
        guard let first = rows.first else { return nil }
        let chain = Chain(endpoint: first.endpointID, activity: first.activityID)
        return state.withLock { state -> UUID? in
            state.busy[chain] = rows.count
            state.busyRows += rows.count
            // Changed in place: a copy taken out of the dictionary and written back would copy the waiting chains
            // (up to the worker's 2,000 unrecorded rows) at every chain a claim adds.
            let starts = state.endpoints[chain.endpoint, default: Endpoint()].add(rows, limit: lanesPerEndpoint)
            return starts ? chain.endpoint : nil
        }
    }

    /// The endpoint's next waiting chain for a lane, or nil (and the lane ends) when none waits or the worker stops.
    /// A chain taken after `stop` is not sent: it is released unsent (see `release`) by whoever stops.
    func next(for endpointID: UUID) -> [Row]? {
        state.withLock { state -> [Row]? in
            // Taken out of the dictionary (not copied), so that trimming its array below does not copy it.
            guard var endpoint = state.endpoints.removeValue(forKey: endpointID) else { return nil }
            defer {
                if endpoint.lanes > 0 || endpoint.next < endpoint.waiting.count {
                    state.endpoints[endpointID] = endpoint
                }
            }
            guard !state.stopped, endpoint.next < endpoint.waiting.count else {
                endpoint.lanes -= 1
                return nil
            }
            let rows = endpoint.waiting[endpoint.next]
            endpoint.next += 1
            if endpoint.next >= 64 {
                // Drop what the lanes have taken, now and then, so the array does not grow for ever.
                endpoint.waiting.removeFirst(endpoint.next)
                endpoint.next = 0
            }
            return rows
        }
    }

    /// Forgets chains whose outcomes are recorded (or that were never sent); their rows no longer count.
    func release(_ chains: [Chain]) {
        state.withLock { state in
            for chain in chains {
                if let rows = state.busy.removeValue(forKey: chain) { state.busyRows -= rows }
            }
        }
    }

    /// Lanes start no new chain from now on; returns the chains still waiting (never handed to a lane).
    func stop() -> [Chain] {
        state.withLock { state in
            state.stopped = true
            var unsent: [Chain] = []
            for (_, endpoint) in state.endpoints where endpoint.next < endpoint.waiting.count {
                for rows in endpoint.waiting[endpoint.next...] {
                    if let first = rows.first {
                        unsent.append(Chain(endpoint: first.endpointID, activity: first.activityID))
                    }
                }
            }
            return unsent
        }
    }
}
