import Foundation
import LiveRelayCore
import LiveRelayHTTP2Client

extension APNsTransport {
    /// Sends channel steps (management requests and broadcasts) with the provider token device pushes use; an
    /// `ExpiredProviderToken` mints a new token once and resends those steps.
    func deliverChannels(_ deliveries: [Delivery]) async -> [DeliveryResult] {
        guard !deliveries.isEmpty else { return [] }
        let requests = deliveries.map { delivery -> ChannelRequest in
            guard case .channel(let message) = delivery.content else {
                preconditionFailure("deliverChannels is given channel deliveries only")
            }
            return ChannelRequest.forDelivery(delivery, message: message)
        }
        let sent: (answers: [Result<(APNsResponse, channelID: String?), HTTP2ClientError>], unsent: [Int: String],
                   token: String)
        do {
            sent = try await sendRefreshingExpired(
                requests, send: { await client.send($0, providerToken: $1) },
                isExpired: { answer in
                    guard case .success(let (response, _)) = answer else { return false }
                    return response.reason == "ExpiredProviderToken"
                })
        } catch {
            return deliveries.map { _ in
                DeliveryResult(outcome: .retry(afterSeconds: nil),
                               error: "cannot sign a provider token: \(error.error)", pushType: .liveactivity)
            }
        }
        let (answers, unsent) = (sent.answers, sent.unsent)
        return deliveries.indices.map { index in
            let environment = deliveries[index].environment
            if let why = unsent[index] {
                return DeliveryResult(outcome: .retry(afterSeconds: nil), error: why, pushType: .liveactivity,
                                      environment: environment)
            }
            switch answers[index] {
            case .success(let (response, channelID)):
                let creates = if case .create = requests[index].operation { true } else { false }
                var result = DeliveryResult(
                    outcome: Self.channelOutcome(response, creates: creates, channelID: channelID),
                    providerStatus: response.status, providerReason: response.reason, pushType: .liveactivity,
                    environment: environment)
                result.apnsChannelID = channelID
                if creates, (200..<300).contains(response.status), channelID == nil {
                    result.error = "Apple answered \(response.status) without an apns-channel-id"
                }
                return result
            case .failure(let error):
                return DeliveryResult(outcome: .retry(afterSeconds: nil), error: "no answer from APNs: \(error)",
                                      pushType: .liveactivity, environment: environment)
            }
        }
    }

    /// What Apple's answer to a channel step means: any 2xx is done (a create only with the channel's id); a channel
    /// Apple does not know (`BadChannelId`, `ChannelNotRegistered`) is gone for good; throttling, server errors and
    /// no answer are retried; any other refusal is final for the channel.
    static func channelOutcome(_ response: APNsResponse, creates: Bool, channelID: String?) -> DeliveryOutcome {
        // The relay's key refused, not the channel: the channel waits for the key to be fixed, as a push does.
        switch DeliveryDecision.classify(response) {
        case .refreshProviderToken, .credentialsRefused: return .credentialsRejected
        default: break
        }
        switch (response.status, response.reason ?? "") {
        case (200..<300, _): return creates && channelID == nil ? .retry(afterSeconds: nil) : .delivered
        case (400, "BadChannelId"), (400, "ChannelNotRegistered"), (404, _), (410, _): return .deadToken
        case (429, _), (500...599, _): return .retry(afterSeconds: response.retryAfterSeconds)
        default: return .rejected
        }
    }
}
