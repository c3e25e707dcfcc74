import Foundation
import LiveRelayCore
import LiveRelayHTTP2Client
import Logging

/// Delivers to iOS through APNs: builds each push's request, sends a batch concurrently and applies Apple's rules
/// (one provider-token refresh on `ExpiredProviderToken`, one try on the other environment on `BadDeviceToken`)
/// before classifying every answer.
public struct APNsTransport: DeliveryTransport {
    public var kind: TransportKind { .apns }

    let client: APNsClient

    public init(client: APNsClient) {
        self.client = client
    }

    /// The APNs request for a delivery.
    public static func request(for delivery: Delivery) -> PushRequest {
        let pushType: PushType = switch delivery.kind {
        case .alert: .alert
        case .widget: .widgets
        case .activity, .start, .channel: .liveactivity
        }
        let payload: JSONValue
        switch delivery.content {
        case .liveActivity(let content):
            payload = APNsPayload.liveActivity(
                event: content.event, timestamp: delivery.timestamp, contentState: content.contentState,
                staleDate: content.staleDate, dismissalDate: content.dismissalDate,
                relevanceScore: content.relevanceScore, alert: content.alert)
        case .prepared(let prepared):
            // A push-to-start carries the send time as its timestamp.
            payload = delivery.kind == .start
                ? APNsPayload.settingTimestamp(delivery.timestamp, in: prepared) : prepared
        case .channel:
            // Channel steps are not device pushes: see deliverChannels (never sent through this request).
            payload = .object([:])
        }
        return PushRequest(
            deviceToken: delivery.token, environment: delivery.environment, bundleID: delivery.bundleID,
            pushType: pushType, priority: delivery.priority, expiration: delivery.expiration, apnsID: delivery.id,
            payload: payload.compactBytes)
    }

    public func deliver(_ deliveries: [Delivery]) async -> [DeliveryResult] {
        let channels = deliveries.indices.filter { deliveries[$0].kind == .channel }
        guard !channels.isEmpty else { return await deliverPushes(deliveries) }
        guard channels.count < deliveries.count else { return await deliverChannels(deliveries) }
        // Channel steps and device pushes side by side (one batch of each).
        let pushes = deliveries.indices.filter { deliveries[$0].kind != .channel }
        async let channelResults = deliverChannels(channels.map { deliveries[$0] })
        let pushResults = await deliverPushes(pushes.map { deliveries[$0] })
        var results = [DeliveryResult?](repeating: nil, count: deliveries.count)
        for (index, result) in zip(pushes, pushResults) { results[index] = result }
        for (index, result) in zip(channels, await channelResults) { results[index] = result }
        return results.map { $0! }
    }

    private func deliverPushes(_ deliveries: [Delivery]) async -> [DeliveryResult] {
        guard !deliveries.isEmpty else { return [] }
        let requests = deliveries.map(Self.request(for:))
        // ExpiredProviderToken: mint a new token once and resend those pushes.
        let sent: (answers: [Result<APNsResponse, HTTP2ClientError>], unsent: [Int: String], token: String)
        do {
            sent = try await sendRefreshingExpired(
                requests, send: { await client.send($0, providerToken: $1) },
                isExpired: { decision($0) == .refreshProviderToken })
        } catch {
            let why = "cannot sign a provider token: \(error.error)"
            return requests.map { result(.retry(afterSeconds: nil), $0, environment: $0.environment, error: why) }
        }
        var answers = sent.answers
        let unsent = sent.unsent, token = sent.token
        var environments = requests.map(\.environment)
        // BadDeviceToken: the token may belong to the other environment; try it there once.
        let elsewhere = answers.indices.filter { decision(answers[$0]) == .tryOtherEnvironment }
        if !elsewhere.isEmpty {
            let moved = elsewhere.map { index -> PushRequest in
                var other = requests[index]
                other.environment = other.environment.other
                return other
            }
            let again = await client.send(moved, providerToken: token)
            for (index, answer) in zip(elsewhere, again) {
                answers[index] = answer
                environments[index] = environments[index].other
            }
        }
        return answers.indices.map { index in
            let request = requests[index], environment = environments[index]
            if let why = unsent[index] {
                return result(.retry(afterSeconds: nil), request, environment: environment, error: why)
            }
            switch answers[index] {
            case .success(let response):
                return result(Self.outcome(of: DeliveryDecision.classify(response)), request, environment: environment,
                              response: response)
            case .failure(let error):
                return result(.retry(afterSeconds: nil), request, environment: environment,
                              error: "no answer from APNs: \(error)")
            }
        }
    }

    public func shutdown() async {
        try? await client.shutdown()
    }

    /// What an APNs decision means once this transport's own rules (refresh, other environment) have been applied.
    static func outcome(of decision: DeliveryDecision) -> DeliveryOutcome {
        switch decision {
        case .sent: return .delivered
        case .retry(let after): return .retry(afterSeconds: after)
        case .invalidateToken, .tryOtherEnvironment: return .deadToken
        case .refreshProviderToken, .credentialsRefused: return .credentialsRejected
        case .fail: return .rejected
        }
    }

    private func result(_ outcome: DeliveryOutcome, _ request: PushRequest, environment: APNsEnvironment,
                        response: APNsResponse? = nil, error: String? = nil) -> DeliveryResult {
        DeliveryResult(
            outcome: outcome, providerStatus: response?.status, providerReason: response?.reason, error: error,
            pushType: request.pushType.kind, environment: environment)
    }

    private func decision(_ answer: Result<APNsResponse, HTTP2ClientError>) -> DeliveryDecision? {
        if case .success(let response) = answer { return DeliveryDecision.classify(response) }
        return nil
    }
}
