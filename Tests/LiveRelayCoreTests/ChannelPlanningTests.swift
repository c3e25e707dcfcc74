import Foundation
@testable import LiveRelayAPNs
@testable import LiveRelayCore
@testable import LiveRelayDelivery
import LiveRelayPostgres
import Testing

/// A channel's steps as values: what the planner makes of a chain's rows and the channel's state, what the recorder
/// makes of Apple's answers, and the requests Apple gets. No database, no network, no clock.
@Suite("Broadcast channel planning")
struct ChannelPlanningTests {
    static let channelID = UUID()
    static let now: Int64 = 1_800_000_000
    static let ios = ChannelChain(channelID: channelID, platform: .ios)

    static func row(_ id: Int64, _ step: ChannelStep, platform: Platform = .ios, payload: JSONValue? = nil)
        -> OutboxRow {
        OutboxRow(id: id, kind: .channel, platform: platform, event: .channel(step), bundleID: "dev.bundle",
                  environment: .production, payload: payload, enqueuedAt: Double(now), channelID: channelID)
    }

    static func channel(status: ChannelStatus = .active, apnsID: String? = "Y2hhbm5lbA==", policy: Int = 0,
                        state: JSONValue? = .object(["n": .integer(3)])) -> ChannelSnapshot {
        ChannelSnapshot(id: channelID, name: "match", bundleID: "dev.bundle", environment: .production,
                        storagePolicy: policy, status: status, apnsChannelID: apnsID, contentState: state)
    }

    static func plan(_ rows: [OutboxRow], _ snapshot: ChannelSnapshot?, chain: ChannelChain = ios)
        -> DeliveryPlanner.Plan {
        var plan = DeliveryPlanner.Plan()
        DeliveryPlanner().planChannels(rows, channels: snapshot.map { [channelID: $0] } ?? [:],
                                       lockedChains: [chain], now: now, into: &plan)
        return plan
    }

    @Test("a burst of updates is one broadcast of the latest state; the create ahead of it goes alone first")
    func burstCoalesces() throws {
        let burst = Self.plan([Self.row(1, .update), Self.row(2, .update), Self.row(3, .update), Self.row(4, .end)],
                              Self.channel())
        let push = try #require(burst.pushes.first)
        #expect(burst.pushes.count == 1 && burst.left == 1)
        #expect(push.rows.map(\.id) == [3, 2, 1] && push.event == .channel(.update))
        guard case .channel(let message) = push.delivery.content else { Issue.record("not a channel"); return }
        #expect(message.content?.contentState == .object(["n": .integer(3)]))
        #expect(push.delivery.expiration == 0, "storage policy 0: apns-expiration 0")
        let create = Self.plan([Self.row(1, .create), Self.row(2, .update)], Self.channel(apnsID: nil))
        #expect(create.pushes.map(\.event) == [.channel(.create)] && create.left == 1)
    }

    @Test("before Apple created it, updates wait (settled: creation queues the latest); after ending, updates stop")
    func statesThatSendNothing() {
        let waiting = Self.plan([Self.row(1, .update)], Self.channel(apnsID: nil))
        #expect(waiting.pushes.isEmpty && waiting.settled.map(\.reason) == [.awaitingChannel])
        #expect(waiting.settled.map(\.channel) == ["match"], "the log names the channel of a settled row")
        let ended = Self.plan([Self.row(1, .update)], Self.channel(status: .ended))
        #expect(ended.settled.map(\.reason) == [.channelNotActive])
        let created = Self.plan([Self.row(1, .create)], Self.channel())
        #expect(created.settled.map(\.reason) == [.channelAlreadyCreated])
        // The FCM side needs no channel at Apple.
        let topic = Self.plan([Self.row(1, .update, platform: .android)], Self.channel(apnsID: nil),
                              chain: ChannelChain(channelID: Self.channelID, platform: .android))
        #expect(topic.pushes.first?.delivery.token == "liverelay.match")
    }

    @Test("a SQL DELETE's rows carry the channel: its end and its delete are planned from them")
    func deletedRowCarriesTheChannel() throws {
        let snapshot: JSONValue = .object([
            "name": .string("match"), "apns_channel_id": .string("Y2hhbm5lbA=="), "fcm_topic": .string("t"),
            "storage_policy": .integer(1), "content_state": .object(["n": .integer(9)]), "priority": .integer(5),
            "dismissal_date": .integer(1_900_000_000),
        ])
        let end = try #require(Self.plan([Self.row(1, .end, payload: snapshot)], nil).pushes.first)
        let request = ChannelRequest.forDelivery(end.delivery, message: try #require(Self.message(end)))
        guard case .broadcast(let id, let priority, let expiration, let payload) = request.operation else {
            Issue.record("not a broadcast"); return
        }
        #expect(id == "Y2hhbm5lbA==" && priority == 5 && expiration == Self.now + 8 * 3600)
        let aps = try JSONValue(parsing: String(decoding: payload, as: UTF8.self)).objectValue?["aps"]?.objectValue
        #expect(aps?["event"] == .string("end") && aps?["dismissal-date"] == .integer(1_900_000_000))
        let delete = try #require(Self.plan([Self.row(2, .delete, payload: snapshot)], nil).pushes.first)
        #expect(ChannelRequest.forDelivery(delete.delivery, message: try #require(Self.message(delete))).operation
                == .delete(channelID: "Y2hhbm5lbA=="))
    }

    @Test("Apple's answers: created with its id; ChannelNotRegistered fails the channel; 503 retries")
    func answersRecorded() throws {
        let recorder = OutcomeRecorder(retry: RetryPolicy(), configured: [.apns])
        let create = try #require(Self.plan([Self.row(1, .create)], Self.channel(apnsID: nil)).pushes.first)
        var outcome = BatchOutcome()
        var answer = DeliveryResult(outcome: .delivered, providerStatus: 201, pushType: .liveactivity)
        answer.apnsChannelID = "bmV3"
        recorder.record(answer, of: create, now: Double(Self.now), random: 0.5, into: &outcome)
        #expect(outcome.createdChannels == [.init(channelID: Self.channelID, apnsChannelID: "bmV3",
                                                  bundleID: "dev.bundle", environment: .production)])
        #expect(outcome.logs.first?.channel == "match" && outcome.logs.first?.status == .sent)

        let update = try #require(Self.plan([Self.row(2, .update)], Self.channel()).pushes.first)
        outcome = BatchOutcome()
        let gone = DeliveryResult(outcome: APNsTransport.channelOutcome(
            APNsResponse(status: 400, reason: "ChannelNotRegistered"), creates: false, channelID: nil),
            providerStatus: 400, providerReason: "ChannelNotRegistered", pushType: .liveactivity)
        recorder.record(gone, of: update, now: Double(Self.now), random: 0.5, into: &outcome)
        #expect(outcome.failedChannels == [.init(channelID: Self.channelID, error: "ChannelNotRegistered")])

        outcome = BatchOutcome()
        let busy = APNsTransport.channelOutcome(APNsResponse(status: 503, retryAfterSeconds: 2), creates: false,
                                                channelID: nil)
        recorder.record(DeliveryResult(outcome: busy, providerStatus: 503, pushType: .liveactivity), of: update,
                        now: Double(Self.now), random: 0.5, into: &outcome)
        #expect(outcome.retries.map(\.rowID) == [2] && outcome.failedChannels.isEmpty)
        #expect(APNsTransport.channelOutcome(APNsResponse(status: 201), creates: true, channelID: nil)
                == .retry(afterSeconds: nil), "a create without apns-channel-id is not done")
        for reason in ["ExpiredProviderToken", "InvalidProviderToken", "MissingProviderToken"] {
            let outcome = APNsTransport.channelOutcome(
                APNsResponse(status: 403, reason: reason), creates: true, channelID: nil)
            #expect(outcome == .credentialsRejected, "the key's refusal: \(reason)")
        }
    }

    static func message(_ push: DeliveryPlanner.Push) -> ChannelMessage? {
        if case .channel(let message) = push.delivery.content { return message }
        return nil
    }
}
