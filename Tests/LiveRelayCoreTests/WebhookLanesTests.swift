import Foundation
import LiveRelayCore
@testable import LiveRelayDelivery
@testable import LiveRelayPostgres
import Testing

/// A webhook worker's claimed chains and the lanes that send them: each endpoint's chains are taken in the order they
/// were claimed, at most `lanesPerEndpoint` lanes per endpoint, and one endpoint's lanes never take another's chains.
@Suite("Webhook lanes")
struct WebhookLanesTests {
    let endpointA = UUID()
    let endpointB = UUID()

    func chain(_ endpoint: UUID, rows: Int = 1, firstID: Int64) -> [WebhookOutboxStore.Row] {
        let activity = UUID()
        return (0..<rows).map { index in
            WebhookOutboxStore.Row(
                id: firstID + Int64(index), endpointID: endpoint, activityID: activity, eventType: "updated",
                attempts: 0, enqueuedAt: 0,
                request: WebhookRequest(url: "http://hooks.test/", secret: "s", eventID: UUID(), body: "{}"))
        }
    }

    @Test("a new lane starts while the endpoint has room, and lanes take its chains in claim order")
    func laneLimitAndOrder() {
        let lanes = WebhookLanes(lanesPerEndpoint: 2)
        #expect(lanes.add(chain(endpointA, rows: 2, firstID: 1)) == endpointA)
        #expect(lanes.add(chain(endpointA, firstID: 3)) == endpointA)
        #expect(lanes.add(chain(endpointA, firstID: 4)) == nil)
        #expect(lanes.busyRows == 4)
        #expect(lanes.busyChains.count == 3)
        #expect(lanes.next(for: endpointA)?.map(\.id) == [1, 2])
        #expect(lanes.next(for: endpointA)?.map(\.id) == [3])
        #expect(lanes.next(for: endpointA)?.map(\.id) == [4])
        // Nothing waits: the lane ends, and so does the second; after that a chain starts a lane again.
        #expect(lanes.next(for: endpointA) == nil)
        #expect(lanes.next(for: endpointA) == nil)
        #expect(lanes.add(chain(endpointA, firstID: 5)) == endpointA)
    }

    @Test("one endpoint's lanes never take another endpoint's chains")
    func endpointsApart() {
        let lanes = WebhookLanes(lanesPerEndpoint: 1)
        #expect(lanes.add(chain(endpointA, firstID: 1)) == endpointA)
        #expect(lanes.add(chain(endpointB, firstID: 2)) == endpointB)
        #expect(lanes.add(chain(endpointA, firstID: 3)) == nil)
        #expect(lanes.next(for: endpointB)?.map(\.id) == [2])
        #expect(lanes.next(for: endpointB) == nil)
        #expect(lanes.next(for: endpointA)?.map(\.id) == [1])
        #expect(lanes.next(for: endpointA)?.map(\.id) == [3])
        #expect(lanes.next(for: endpointA) == nil)
    }

    @Test("hundreds of chains through one lane keep their order across the trims of the taken ones")
    func manyChains() {
        let lanes = WebhookLanes(lanesPerEndpoint: 1)
        var taken: [Int64] = []
        for id in Int64(1)...150 { _ = lanes.add(chain(endpointA, firstID: id)) }
        for _ in 0..<100 { taken += lanes.next(for: endpointA)?.map(\.id) ?? [] }
        for id in Int64(151)...300 { #expect(lanes.add(chain(endpointA, firstID: id)) == nil) }
        while let rows = lanes.next(for: endpointA) { taken += rows.map(\.id) }
        #expect(taken == Array(1...300))
        lanes.release(lanes.busyChains)
        #expect(lanes.busyRows == 0)
    }

    @Test("stopped: the chains not yet taken are handed back, and lanes take nothing more")
    func stop() {
        let lanes = WebhookLanes(lanesPerEndpoint: 1)
        _ = lanes.add(chain(endpointA, firstID: 1))
        _ = lanes.add(chain(endpointA, firstID: 2))
        _ = lanes.add(chain(endpointB, firstID: 3))
        #expect(lanes.next(for: endpointA)?.map(\.id) == [1])
        let unsent = lanes.stop()
        #expect(Set(unsent.map(\.endpoint)) == [endpointA, endpointB])
        #expect(unsent.count == 2)
        #expect(lanes.next(for: endpointA) == nil)
        #expect(lanes.next(for: endpointB) == nil)
    }
}
