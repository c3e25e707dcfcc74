import Foundation
import LiveRelayAPNs
import LiveRelayCore
import Testing

@Suite("Delivery planner")
struct DeliveryPlannerTests {
    let activity = UUID()
    let planner = DeliveryPlanner()

    func snapshot(state: JSONValue = .object(["n": .integer(3)]), status: ActivityStatus = .active,
                  lastHash: String? = nil,
                  lastTimestamp: Int64? = nil, message: String? = nil) -> ActivitySnapshot {
        ActivitySnapshot(
            id: activity, activityToken: "aa11", bundleID: "b.app", environment: .sandbox, status: status,
            contentState: state,
            priority: 5, message: message, lastTimestamp: lastTimestamp, lastPayloadHash: lastHash)
    }

    func rows(_ ids: [Int64]) -> [OutboxRow] {
        ids.map { OutboxRow(id: $0, kind: .activity, activityID: activity, event: .activity(.update), enqueuedAt: 0) }
    }

    @Test("a burst of rows for one activity becomes one push of its current state")
    func coalesces() throws {
        let plan = planner.plan(
            rows: rows([4, 9, 7]), snapshots: [activity: snapshot()], lockedActivities: [activity], now: 100)
        let push = try #require(plan.pushes.first)
        #expect(plan.pushes.count == 1)
        #expect(push.rows.map(\.id) == [9, 7, 4])
        #expect(push.delivery.id == push.rows[0].apnsID)
        #expect(APNsTransport.request(for: push.delivery).topic == "b.app.push-type.liveactivity")
        #expect(push.delivery.environment == .sandbox)
        #expect(push.delivery.priority == 5)
    }

    @Test("the state last sent is not sent again")
    func skipsRepeat() throws {
        let first = try #require(
            planner.plan(rows: rows([1]), snapshots: [activity: snapshot()], lockedActivities: [activity], now: 100)
                .pushes.first)
        let again = planner.plan(
            rows: rows([2]), snapshots: [activity: snapshot(lastHash: first.stateHash, lastTimestamp: 100)],
                                 lockedActivities: [activity], now: 101)
        #expect(again.pushes.isEmpty)
        #expect(again.settled.map(\.status) == [.coalesced])
    }

    @Test("aps.timestamp never goes backwards, even if the clock does")
    func monotonicTimestamp() throws {
        let plan = planner.plan(
            rows: rows([1]), snapshots: [activity: snapshot(lastTimestamp: 500)], lockedActivities: [activity], now: 400
        )
        #expect(plan.pushes.first?.timestamp == 500)
    }

    @Test("an ended activity gets an end push at priority 10; an invalidated one gets nothing")
    func endAndInvalidated() throws {
        let end = planner.plan(
            rows: rows([1]), snapshots: [activity: snapshot(status: .ended)], lockedActivities: [activity], now: 1)
        #expect(end.pushes.first?.event == .activity(.end))
        #expect(end.pushes.first?.delivery.priority == 10)
        let dead = planner.plan(
            rows: rows([1]), snapshots: [activity: snapshot(status: .invalidated)], lockedActivities: [activity],
            now: 1)
        #expect(dead.pushes.isEmpty)
        #expect(dead.settled.first?.reason == .tokenInvalidated)
    }

    @Test("rows of activities another worker holds are left alone")
    func unlockedLeftAlone() {
        let plan = planner.plan(rows: rows([1]), snapshots: [:], lockedActivities: [], now: 1)
        #expect(plan.pushes.isEmpty && plan.settled.isEmpty)
    }
}
