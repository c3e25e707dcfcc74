import Foundation
import LiveRelayAPNs
import LiveRelayCore
import Testing

/// The planner's side of foreground-aware delivery and widget reloads, without a database.
@Suite("Foreground and widget planning")
struct ForegroundPlanningTests {
    let activity = UUID()

    func snapshot(foreground: Bool, status: ActivityStatus = .active, platform: Platform = .ios) -> ActivitySnapshot {
        ActivitySnapshot(
            id: activity, activityToken: "aa11", bundleID: "b.app", environment: .production, status: status,
            platform: platform, contentState: .object(["n": .integer(1)]), priority: 10, foreground: foreground)
    }

    func plan(_ policy: ForegroundPolicy, _ snapshot: ActivitySnapshot, alert: Bool = false) -> DeliveryPlanner.Plan {
        var planner = DeliveryPlanner()
        planner.foregroundPolicy = policy
        let payload: JSONValue? = alert ? .object(["alert": .object(["title": .string("t")])]) : nil
        let row = OutboxRow(id: 1, kind: .activity, activityID: activity, event: .activity(.update), payload: payload,
                            enqueuedAt: 0)
        return planner.plan(rows: [row], snapshots: [activity: snapshot], lockedActivities: [activity], now: 100)
    }

    @Test("downgrade: a foreground update goes at 5 for the foreground; end, alerts and closed apps keep 10")
    func downgrade() throws {
        let lowered = try #require(plan(.downgrade, snapshot(foreground: true)).pushes.first?.delivery)
        #expect(lowered.priority == 5 && lowered.priorityReason == .foreground)
        let end = try #require(plan(.downgrade, snapshot(foreground: true, status: .ended)).pushes.first?.delivery)
        #expect(end.priority == 10 && end.priorityReason == .end)
        let alert = try #require(plan(.downgrade, snapshot(foreground: true), alert: true).pushes.first?.delivery)
        #expect(alert.priority == 10 && alert.priorityReason == .alert)
        let closed = try #require(plan(.downgrade, snapshot(foreground: false)).pushes.first?.delivery)
        #expect(closed.priority == 10 && closed.priorityReason == .requested)
        let off = try #require(plan(.off, snapshot(foreground: true)).pushes.first?.delivery)
        #expect(off.priority == 10)
        let android = try #require(plan(.downgrade, snapshot(foreground: true, platform: .android)).pushes.first)
        #expect(android.delivery.priority == 5 && android.delivery.priorityReason == .foreground)
    }

    @Test("skip: a foreground update is settled skipped (Foreground), never sent; end still goes")
    func skip() throws {
        let skipped = plan(.skip, snapshot(foreground: true))
        #expect(skipped.pushes.isEmpty)
        #expect(skipped.settled.map(\.status) == [.skipped] && skipped.settled.map(\.reason) == [.foreground])
        #expect(plan(.skip, snapshot(foreground: true, status: .ended)).pushes.count == 1)
        #expect(plan(.skip, snapshot(foreground: true), alert: true).pushes.count == 1)
    }

    func widgetRows(_ ids: [Int64], token: String = "cc22") -> [OutboxRow] {
        ids.map {
            OutboxRow(id: $0, kind: .widget, event: .widgetReload, deviceToken: token, bundleID: "b.app",
                      environment: .sandbox, payload: APNsPayload.widgetReload, priority: 10, enqueuedAt: 0)
        }
    }

    @Test("a token's rows are one reload, as Apple specifies it; inside the window they wait for its end")
    func widgets() throws {
        var planner = DeliveryPlanner()
        planner.widgetMinIntervalSeconds = 60
        let due = planner.plan(rows: widgetRows([3, 5, 4]), snapshots: [:], lockedActivities: [],
                               widgets: ["cc22": WidgetState(registered: true, secondsSinceReload: 61)], now: 100)
        let push = try #require(due.pushes.first)
        #expect(due.pushes.count == 1 && push.rows.map(\.id) == [5, 4, 3])
        let request = APNsTransport.request(for: push.delivery)
        #expect(request.pushType == .widgets && request.topic == "b.app.push-type.widgets")
        #expect(request.payload == APNsPayload.widgetReload.compactBytes && request.environment == .sandbox)

        let early = planner.plan(rows: widgetRows([6]), snapshots: [:], lockedActivities: [],
                                 widgets: ["cc22": WidgetState(registered: true, secondsSinceReload: 45)], now: 100)
        #expect(early.pushes.isEmpty && early.deferred.map(\.row.id) == [6])
        #expect(abs((early.deferred.first?.delaySeconds ?? 0) - 15) < 0.001)

        let gone = planner.plan(rows: widgetRows([7]), snapshots: [:], lockedActivities: [],
                                widgets: ["cc22": WidgetState(registered: false, secondsSinceReload: nil)], now: 100)
        #expect(gone.pushes.isEmpty && gone.settled.map(\.reason) == [.widgetTokenUnregistered])
        // Rows of a token another worker holds are left alone.
        let held = planner.plan(rows: widgetRows([8]), snapshots: [:], lockedActivities: [], now: 100)
        #expect(held.pushes.isEmpty && held.settled.isEmpty && held.deferred.isEmpty)
    }
}
