import Foundation
import LiveRelayAPNs
import LiveRelayCore
import Testing

@Suite("APNs payloads")
struct APNsPayloadTests {
    @Test("a Live Activity update has Apple's keys, compact and sorted")
    func updatePayload() {
        let payload = APNsPayload.liveActivity(
            event: .update, timestamp: 1_712_345_678, contentState: .object(["status": .string("working")]),
            staleDate: 1_712_349_278, relevanceScore: 50)
        let expected = #"{"aps":{"content-state":{"status":"working"},"event":"update","relevance-score":50,"#
            + #""stale-date":1712349278,"timestamp":1712345678}}"#
        #expect(String(decoding: payload.compactBytes, as: UTF8.self) == expected)
    }

    @Test("dismissal-date is sent with end only")
    func dismissalDateOnlyOnEnd() {
        let update = APNsPayload.liveActivity(
            event: .update, timestamp: 1, contentState: .object([:]), dismissalDate: 9)
        let end = APNsPayload.liveActivity(event: .end, timestamp: 1, contentState: .object([:]), dismissalDate: 9)
        #expect(update.objectValue?["aps"]?.objectValue?["dismissal-date"] == nil)
        #expect(end.objectValue?["aps"]?.objectValue?["dismissal-date"] == .integer(9))
    }

    @Test("push-to-start carries attributes-type, attributes and an alert")
    func pushToStart() {
        let payload = APNsPayload.pushToStart(
            timestamp: 5, attributesType: "SessionActivityAttributes",
            attributes: .object(["sessionId": .string("abc")]),
            contentState: .object(["status": .string("working")]),
            alert: .object(["title": .string("Session Started"), "body": .string("OpenCode is working")]))
        let aps = payload.objectValue?["aps"]?.objectValue
        #expect(aps?["event"] == .string("start"))
        #expect(aps?["attributes-type"] == .string("SessionActivityAttributes"))
        #expect(aps?["attributes"] == .object(["sessionId": .string("abc")]))
    }

    @Test("the device note: the message, null when empty, absent without a message row")
    func noteMerge() {
        let state = JSONValue.object(["mode": .string("vpn")])
        #expect(APNsPayload.mergingNote("hi", into: state) == .object(["mode": .string("vpn"), "note": .string("hi")]))
        #expect(APNsPayload.mergingNote("", into: state) == .object(["mode": .string("vpn"), "note": .null]))
        #expect(APNsPayload.mergingNote(nil, into: state) == state)
    }

    @Test("strings are escaped as JSON requires, and unicode is kept as UTF-8")
    func stringEscaping() throws {
        let value = JSONValue.object(["s": .string("a\"b\\c\nd\u{01}é/")])
        let text = String(decoding: value.compactBytes, as: UTF8.self)
        #expect(text == "{\"s\":\"a\\\"b\\\\c\\nd\\u0001é/\"}")
        #expect(try JSONValue(parsing: text) == value)
    }

    @Test("numbers keep integers exact and fractions as fractions")
    func numbers() throws {
        let parsed = try JSONValue(parsing: #"{"i": 1712345678901, "f": 0.5, "b": true, "n": null}"#)
        #expect(
            String(decoding: parsed.compactBytes, as: UTF8.self) == #"{"b":true,"f":0.5,"i":1712345678901,"n":null}"#)
    }
}

@Suite("APNs answers")
struct DeliveryDecisionTests {
    @Test("Apple's status codes and reasons map to what the relay does", arguments: [
        (APNsResponse(status: 200), DeliveryDecision.sent),
        (APNsResponse(status: 410, reason: "Unregistered"), .invalidateToken),
        (APNsResponse(status: 410, reason: "ExpiredToken"), .invalidateToken),
        (APNsResponse(status: 400, reason: "BadDeviceToken"), .tryOtherEnvironment),
        (APNsResponse(status: 400, reason: "DeviceTokenNotForTopic"), .invalidateToken),
        (APNsResponse(status: 403, reason: "ExpiredProviderToken"), .refreshProviderToken),
        (APNsResponse(status: 403, reason: "InvalidProviderToken"), .credentialsRefused),
        (APNsResponse(status: 403, reason: "MissingProviderToken"), .credentialsRefused),
        (APNsResponse(status: 429, reason: "TooManyRequests", retryAfterSeconds: 3), .retry(afterSeconds: 3)),
        (APNsResponse(status: 503, reason: "ServiceUnavailable"), .retry(afterSeconds: nil)),
        (APNsResponse(status: 500, reason: "InternalServerError"), .retry(afterSeconds: nil)),
        (APNsResponse(status: 413, reason: "PayloadTooLarge"), .fail),
        (APNsResponse(status: 400, reason: "BadTopic"), .fail),
    ])
    func classify(response: APNsResponse, expected: DeliveryDecision) {
        #expect(DeliveryDecision.classify(response) == expected)
    }
}

@Suite("Retry policy")
struct RetryPolicyTests {
    let policy = RetryPolicy(
        initialDelaySeconds: 0.25, maximumDelaySeconds: 60, maximumAttempts: 12, maximumAgeSeconds: 3600)

    @Test("delays grow exponentially within jitter bounds, capped")
    func exponentialWithJitter() {
        #expect(policy.delayBounds(afterAttempt: 1) == 0.125...0.25)
        #expect(policy.delayBounds(afterAttempt: 3) == 0.5...1.0)
        #expect(policy.delayBounds(afterAttempt: 20) == 30...60)
        for attempt in 1...11 {
            let delay = policy.nextDelay(afterAttempt: attempt, ageSeconds: 0, retryAfterSeconds: nil, random: 0.37)!
            #expect(policy.delayBounds(afterAttempt: attempt).contains(delay))
        }
    }

    @Test("retry-after is a lower bound")
    func honoursRetryAfter() {
        #expect(policy.nextDelay(afterAttempt: 1, ageSeconds: 0, retryAfterSeconds: 7, random: 0) == 7)
    }

    @Test("gives up after the last attempt or past the age limit")
    func bounded() {
        #expect(policy.nextDelay(afterAttempt: 12, ageSeconds: 0, retryAfterSeconds: nil, random: 0.5) == nil)
        #expect(policy.nextDelay(afterAttempt: 2, ageSeconds: 3599.9, retryAfterSeconds: nil, random: 0.5) == nil)
    }
}
