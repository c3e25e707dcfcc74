import Foundation
import LiveRelayAPNs
import LiveRelayCore
import Logging

/// Sends planned pushes concurrently and applies APNs' rules: one provider-token refresh on
/// `ExpiredProviderToken`, one try on the other environment on `BadDeviceToken`.
public struct PushSender: Sendable {
    /// What happened to one push.
    public struct Result: Sendable {
        public var decision: DeliveryDecision
        public var response: APNsResponse?
        /// The environment that gave the final answer.
        public var environment: APNsEnvironment
        /// Why no answer came (connection error or deadline).
        public var error: String?
    }

    private let client: APNsClient
    private let logger: Logger

    public init(client: APNsClient, logger: Logger) {
        self.client = client
        self.logger = logger
    }

    /// Sends all pushes at once (one HTTP/2 flush per connection) and returns results in the same order.
    public func sendAll(_ pushes: [DeliveryPlanner.Push]) async -> [Result] {
        guard !pushes.isEmpty else { return [] }
        let requests = pushes.map(\.request)
        var token: String
        do {
            token = try client.tokens.token()
        } catch {
            return requests.map { Result(decision: .retry(afterSeconds: nil), response: nil, environment: $0.environment,
                                         error: "cannot sign a provider token: \(error)") }
        }
        var answers = await client.send(requests, providerToken: token)
        var environments = requests.map(\.environment)
        var unsent: [Int: String] = [:]

        // ExpiredProviderToken: mint a new token once and resend those pushes.
        let expired = answers.indices.filter { decision(answers[$0]) == .refreshProviderToken }
        if !expired.isEmpty {
            do {
                token = try client.tokens.refresh(rejected: token)
                let again = await client.send(expired.map { requests[$0] }, providerToken: token)
                for (index, answer) in zip(expired, again) { answers[index] = answer }
            } catch {
                for index in expired { unsent[index] = "cannot sign a new provider token: \(error)" }
            }
        }
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
            let environment = environments[index]
            if let why = unsent[index] {
                return Result(decision: .retry(afterSeconds: nil), response: nil, environment: environment, error: why)
            }
            switch answers[index] {
            case .success(let response):
                return Result(decision: DeliveryDecision.classify(response), response: response, environment: environment, error: nil)
            case .failure(let error):
                return Result(decision: .retry(afterSeconds: nil), response: nil, environment: environment,
                              error: "no answer from APNs: \(error)")
            }
        }
    }

    private func decision(_ answer: Swift.Result<APNsResponse, APNsTransportError>) -> DeliveryDecision? {
        if case .success(let response) = answer { return DeliveryDecision.classify(response) }
        return nil
    }
}
