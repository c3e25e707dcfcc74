import Foundation
import LiveRelayCore
import Testing

@Suite("Lifecycle rules")
struct LifecycleRulesTests {
    @Test("the signature is HMAC-SHA256 over \"<t>.<body>\", as in the README's worked example; verify checks it")
    func signature() {
        let body = Array(#"{"id":"e1","type":"live_activity.ended"}"#.utf8)
        let header = WebhookSignature.header(secret: "whsec_0123456789abcdef", timestamp: 1_767_225_600, body: body)
        #expect(header.hasPrefix("t=1767225600,v1=") && header.count == "t=1767225600,v1=".count + 64)
        #expect(WebhookSignature.verify(header: header, secret: "whsec_0123456789abcdef", body: body,
                                        now: 1_767_225_650))
        #expect(!WebhookSignature.verify(header: header, secret: "whsec_0123456789abcdeX", body: body,
                                         now: 1_767_225_650))
        #expect(!WebhookSignature.verify(header: header, secret: "whsec_0123456789abcdef", body: body + [0x20],
                                         now: 1_767_225_650))
        #expect(!WebhookSignature.verify(header: header, secret: "whsec_0123456789abcdef", body: body,
                                         now: 1_767_225_600 + 301), "a replay outside the tolerance")
    }

    @Test("loopback, private, link-local and their IPv6 and mapped forms are refused; public addresses pass",
          arguments: [
              ([127, 0, 0, 1], "loopback"), ([10, 0, 0, 8], "private"), ([172, 20, 1, 1], "private"),
              ([192, 168, 1, 1], "private"), ([169, 254, 169, 254], "link-local"), ([0, 0, 0, 0], "unspecified"),
              ([100, 64, 0, 1], "shared"), ([93, 184, 216, 34], nil), ([172, 32, 0, 1], nil),
          ] as [([UInt8], String?)])
    func addressesIPv4(_ address: [UInt8], _ refusal: String?) {
        let found = AddressPolicy.refusal(of: address)
        if let refusal { #expect(found?.contains(refusal) == true, "\(address): \(found ?? "allowed")") }
        else { #expect(found == nil, "\(address): \(found ?? "")") }
    }

    @Test("IPv6: ::1, fc00::/7, fe80::/10 and ::ffff:10.0.0.1 are refused; 2606:4700::1111 passes")
    func addressesIPv6() {
        func v6(_ head: [UInt8], tail: [UInt8] = []) -> [UInt8] {
            head + [UInt8](repeating: 0, count: 16 - head.count - tail.count) + tail
        }
        #expect(AddressPolicy.refusal(of: v6([], tail: [1])) == "loopback")
        #expect(AddressPolicy.refusal(of: v6([0xfd, 0x12]))?.contains("private") == true)
        #expect(AddressPolicy.refusal(of: v6([0xfe, 0x80])) == "link-local")
        #expect(AddressPolicy.refusal(of: v6([], tail: [0xff, 0xff, 10, 0, 0, 1])) == "private")
        #expect(AddressPolicy.refusal(of: v6([0x26, 0x06, 0x47, 0x00], tail: [0x11, 0x11])) == nil)
    }

    @Test("outcomes map to events: sent update/end/start, failed (not a dead token), nothing for retries and alerts")
    func events() {
        #expect(LifecycleEvent.forOutcome(kind: .activity, event: .update, status: .sent, deadToken: false) == .updated)
        #expect(LifecycleEvent.forOutcome(kind: .activity, event: .end, status: .sent, deadToken: false) == .ended)
        #expect(LifecycleEvent.forOutcome(kind: .start, event: .start, status: .sent, deadToken: false) == .started)
        #expect(LifecycleEvent.forOutcome(kind: .activity, event: .update, status: .failed, deadToken: false)
                == .failed)
        #expect(LifecycleEvent.forOutcome(kind: .activity, event: .update, status: .failed, deadToken: true) == nil)
        #expect(LifecycleEvent.forOutcome(kind: .activity, event: .update, status: .retrying, deadToken: false) == nil)
        #expect(LifecycleEvent.forOutcome(kind: .alert, event: nil, status: .sent, deadToken: false) == nil)
    }

    @Test("the budget: 10 until the hour's count reaches the limit (doubled for frequent updates), then 5")
    func budget() throws {
        var planner = DeliveryPlanner()
        planner.priority10PerHour = 3
        let id = UUID()
        func priority(count: Int, frequent: Bool = false, alert: Bool = false, ended: Bool = false) throws
            -> (Int, PriorityReason) {
            let snapshot = ActivitySnapshot(
                id: id, activityToken: "aa11", bundleID: "b", environment: .production,
                status: ended ? .ended : .active, contentState: .object(["n": .integer(Int64(count))]),
                frequentUpdates: frequent, priority10LastHour: count)
            let row = OutboxRow(id: 1, kind: .activity, activityID: id, event: .activity(.update),
                                payload: alert ? .object(["alert": .object(["title": .string("t")])]) : nil,
                                enqueuedAt: 0)
            let push = try #require(planner.plan(rows: [row], snapshots: [id: snapshot], lockedActivities: [id],
                                                 now: 100).pushes.first)
            return (push.delivery.priority, push.delivery.priorityReason)
        }
        #expect(try priority(count: 2) == (10, .requested))
        #expect(try priority(count: 3) == (5, .budget))
        #expect(try priority(count: 5, frequent: true) == (10, .requested))
        #expect(try priority(count: 6, frequent: true) == (5, .budget))
        #expect(try priority(count: 9, alert: true) == (10, .alert))
        #expect(try priority(count: 9, ended: true) == (10, .end))
    }

    @Test("an activity without a token is kept waiting: its rows settle as coalesced, AwaitingToken")
    func awaitingToken() {
        let id = UUID()
        let snapshot = ActivitySnapshot(id: id, activityToken: nil, bundleID: "b", environment: .production,
                                        status: .active, contentState: .object([:]))
        let row = OutboxRow(id: 1, kind: .activity, activityID: id, event: .activity(.update), enqueuedAt: 0)
        let plan = DeliveryPlanner().plan(rows: [row], snapshots: [id: snapshot], lockedActivities: [id], now: 1)
        #expect(plan.pushes.isEmpty)
        #expect(plan.settled.map(\.status) == [.coalesced] && plan.settled.first?.reason == .awaitingToken)
    }
}
