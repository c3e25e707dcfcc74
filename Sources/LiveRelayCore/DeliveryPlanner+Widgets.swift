import Foundation

/// A widget token's state, as the claim reads it under the token's lock.
public struct WidgetState: Sendable, Hashable {
    /// Some device row still has this token (it was not replaced or found dead).
    public var registered: Bool
    /// Seconds since its last reload (nil: never reloaded).
    public var secondsSinceReload: Double?

    public init(registered: Bool, secondsSinceReload: Double?) {
        self.registered = registered
        self.secondsSinceReload = secondsSinceReload
    }
}

extension DeliveryPlanner {
    /// Widget rows: all rows of one token become one reload (`{"aps":{"content-changed":true}}` carries nothing that
    /// could be out of date). A token reloaded less than `widgetMinIntervalSeconds` ago has its rows put off to the
    /// end of that window, so a burst of changes is one reload at once and one at the window's end, and the latest
    /// change always gets a reload after it. Rows of tokens another worker holds wait.
    func planWidgets(_ rows: [OutboxRow], widgets: [String: WidgetState], now: Int64, into plan: inout Plan) {
        var byToken: [String: [OutboxRow]] = [:]
        var order: [String] = []
        for row in rows where row.kind == .widget {
            guard let token = row.deviceToken else {
                plan.settled.append(.init(row: row, status: .failed, reason: .malformedOutboxRow))
                continue
            }
            guard widgets[token] != nil else { continue }
            if byToken[token] == nil { order.append(token) }
            byToken[token, default: []].append(row)
        }
        for token in order {
            let tokenRows = byToken[token]!.sorted { $0.id > $1.id }
            let state = widgets[token]!
            guard state.registered, let bundleID = tokenRows[0].bundleID else {
                plan.settled += tokenRows.map { .init(row: $0, status: .coalesced, reason: .widgetTokenUnregistered) }
                continue
            }
            if let since = state.secondsSinceReload, since < widgetMinIntervalSeconds {
                let delay = widgetMinIntervalSeconds - since
                plan.deferred += tokenRows.map { Deferred(row: $0, delaySeconds: delay) }
                continue
            }
            let delivery = Delivery(
                platform: .ios, kind: .widget, token: token, content: .prepared(APNsPayload.widgetReload),
                priority: tokenRows[0].priority ?? 10, expiration: now + liveActivityExpirationSeconds,
                id: tokenRows[0].apnsID, bundleID: bundleID, environment: tokenRows[0].environment ?? .production,
                sessionID: nil, timestamp: now)
            plan.pushes.append(Push(delivery: delivery, rows: tokenRows, stateHash: nil, event: .widgetReload))
        }
    }
}
