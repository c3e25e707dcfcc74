import Foundation
@testable import LiveRelayCore
import LiveRelayPostgres
import Testing
@testable import LiveRelayDelivery

/// What a batch records for each answer, as a pure function of the push, the answer, the time and the jitter: no
/// database, no transport, no clock.
@Suite("Outcome recording")
struct OutcomeRecorderTests {
    static let activity = UUID()
    static let now = 1_800_000_000.0
    static let recorder = OutcomeRecorder(retry: RetryPolicy(), configured: [.apns])

    /// An update of one activity settling rows 12 (newest, queued 0.5 s ago) and 11 (coalesced).
    static func push(platform: Platform = .ios, kind: OutboxRow.Kind = .activity, attempts: Int = 0,
                     queuedSecondsAgo: Double = 0.5) -> DeliveryPlanner.Push {
        let rows = [12, 11].map {
            OutboxRow(id: Int64($0), kind: kind, platform: platform, activityID: activity, event: .activity(.update),
                      enqueuedAt: now - queuedSecondsAgo - Double(12 - $0), attempts: attempts)
        }
        let delivery = Delivery(
            platform: platform, kind: kind, token: "token-0123456789abcdef",
            content: .liveActivity(LiveActivityContent(event: .update, contentState: .object(["n": .integer(1)]))),
            priority: 10, expiration: 0, id: UUID(), bundleID: "dev.liverelay.test", environment: .production,
            activityID: activity, timestamp: 1_800_000_000)
        return DeliveryPlanner.Push(delivery: delivery, rows: rows, stateHash: "hash", event: .activity(.update))
    }

    static func record(_ result: DeliveryResult, _ push: DeliveryPlanner.Push = push(), random: Double = 0.5)
        -> (BatchOutcome, OutcomeRecorder.DeadToken?) {
        var outcome = BatchOutcome()
        let dead = recorder.record(result, of: push, now: now, random: random, into: &outcome)
        return (outcome, dead)
    }

    @Test("delivered: every row finished, the newest sent with its latency and priority, the rest coalesced")
    func delivered() throws {
        let (outcome, dead) = Self.record(DeliveryResult(
            outcome: .delivered, providerStatus: 200, pushType: .liveactivity, environment: .sandbox))
        #expect(dead == nil && outcome.finishedRowIDs == [12, 11] && outcome.retries.isEmpty)
        let sent = try #require(outcome.logs.first)
        #expect(sent.status == .sent && sent.outboxID == 12 && sent.providerStatus == 200 && sent.priority == 10)
        #expect(sent.transport == .apns && sent.lifecycle == .updated)
        #expect(abs((sent.latencyMilliseconds ?? 0) - 500) < 0.001)
        let coalesced = try #require(outcome.logs.last)
        #expect(coalesced.status == .coalesced && coalesced.outboxID == 11 && coalesced.providerStatus == nil)
        #expect(coalesced.error == "superseded by outbox row 12" && coalesced.latencyMilliseconds == nil)
        #expect(outcome.sentStates.map(\.stateHash) == ["hash"] && outcome.sentStates[0].priority10)
        // Answered by the other environment than the stored one: the token's environment is learnt.
        #expect(outcome.environmentChanges.map(\.environment) == [.sandbox])
    }

    @Test("a transient answer: every row retried after the same delay, never before Retry-After")
    func retried() throws {
        let (outcome, _) = Self.record(DeliveryResult(
            outcome: .retry(afterSeconds: 30), providerStatus: 429, providerReason: "TooManyRequests",
            pushType: .liveactivity))
        #expect(outcome.finishedRowIDs.isEmpty)
        #expect(outcome.retries.map(\.rowID) == [12, 11] && outcome.retries.allSatisfy { $0.delaySeconds == 30 })
        let log = try #require(outcome.logs.first)
        #expect(outcome.logs.count == 1 && log.status == .retrying && log.providerReason == "TooManyRequests")
        #expect(log.error == "APNS 429 TooManyRequests; next attempt in 30000 ms")
    }

    @Test("the jitter spans the first delay's bounds (0.125-0.25 s)")
    func jitter() {
        let answer = DeliveryResult(outcome: .retry(afterSeconds: nil), error: "no answer", pushType: .liveactivity)
        let low = Self.record(answer, random: 0).0.retries.first?.delaySeconds
        let high = Self.record(answer, random: 1).0.retries.first?.delaySeconds
        #expect(low == 0.125 && high == 0.25)
    }

    @Test("past the last attempt the push fails, saying why, and the activity's failed event is written")
    func givesUp() throws {
        let (outcome, _) = Self.record(
            DeliveryResult(outcome: .retry(afterSeconds: nil), error: "connection reset", pushType: .liveactivity),
            Self.push(attempts: 11))
        #expect(outcome.retries.isEmpty && outcome.finishedRowIDs == [12, 11])
        let log = try #require(outcome.logs.first)
        #expect(log.status == .failed && log.error == "gave up after 12 attempts: connection reset")
        #expect(log.lifecycle == .failed)
    }

    @Test("a dead activity token is retired (no failed event: invalidated is written with the token)")
    func deadActivityToken() throws {
        let (outcome, dead) = Self.record(DeliveryResult(
            outcome: .deadToken, providerStatus: 410, providerReason: "Unregistered", pushType: .liveactivity))
        #expect(dead == .init(token: "token-0123456789abcdef", reason: "Unregistered", transport: .apns))
        #expect(outcome.deadActivityTokens.map(\.activityID) == [Self.activity])
        let log = try #require(outcome.logs.first)
        #expect(log.status == .failed && log.error == "token invalidated: Unregistered" && log.lifecycle == nil)
    }

    @Test("a dead alert token removes the device's token; a dead start token the start token")
    func deadOtherTokens() {
        let answer = DeliveryResult(outcome: .deadToken, providerStatus: 400, providerReason: "BadDeviceToken",
                                    pushType: .alert)
        #expect(Self.record(answer, Self.push(kind: .alert)).0.deadDeviceTokens == ["token-0123456789abcdef"])
        #expect(Self.record(answer, Self.push(kind: .start)).0.deadStartTokens == ["token-0123456789abcdef"])
    }

    @Test("refused credentials wait with backoff; a rejected message fails with the service's reason")
    func credentialsAndRejection() throws {
        let refused = Self.record(DeliveryResult(
            outcome: .credentialsRejected, providerStatus: 403, providerReason: "InvalidProviderToken",
            pushType: .liveactivity)).0
        #expect(refused.retries.count == 2 && refused.finishedRowIDs.isEmpty)
        #expect(refused.logs.first?.error?.hasPrefix(
            "APNS 403 InvalidProviderToken: the relay's credentials were refused; fix the key; next attempt in")
            == true)
        let rejected = Self.record(DeliveryResult(
            outcome: .rejected, providerStatus: 413, providerReason: "PayloadTooLarge", pushType: .liveactivity)).0
        #expect(rejected.logs.first?.status == .failed && rejected.logs.first?.error == "PayloadTooLarge")
    }

    @Test("a push for a transport this relay does not have is logged without transport or latency")
    func unconfiguredTransport() throws {
        let answer = DeliveryResult(outcome: .rejected, error: "FCMNotConfigured", pushType: .data)
        let (outcome, _) = Self.record(answer, Self.push(platform: .android))
        let log = try #require(outcome.logs.first)
        #expect(log.transport == nil && log.latencyMilliseconds == nil && log.error == "FCMNotConfigured")
    }
}
