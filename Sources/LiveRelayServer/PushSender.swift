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

    /// Sends all pushes at once (HTTP/2 multiplexes them) and returns results in the same order.
    public func sendAll(_ pushes: [DeliveryPlanner.Push]) async -> [Result] {
        guard pushes.count > 1 else { return await pushes.asyncMap { await send($0.request) } }
        return await withTaskGroup(of: (Int, Result).self) { group in
            for (index, push) in pushes.enumerated() {
                group.addTask { (index, await self.send(push.request)) }
            }
            var results = [Result?](repeating: nil, count: pushes.count)
            for await (index, result) in group { results[index] = result }
            return results.map { $0! }
        }
    }

    /// Sends one push, following APNs' answers as described above.
    public func send(_ request: PushRequest) async -> Result {
        do {
            var token = try client.tokens.token()
            var response = try await client.send(request, providerToken: token)
            if DeliveryDecision.classify(response) == .refreshProviderToken {
                token = try client.tokens.refresh(rejected: token)
                response = try await client.send(request, providerToken: token)
            }
            if DeliveryDecision.classify(response) == .tryOtherEnvironment {
                var other = request
                other.environment = request.environment.other
                let otherResponse = try await client.send(other, providerToken: token)
                return Result(decision: DeliveryDecision.classify(otherResponse), response: otherResponse,
                              environment: other.environment, error: nil)
            }
            return Result(decision: DeliveryDecision.classify(response), response: response, environment: request.environment, error: nil)
        } catch {
            return Result(decision: .retry(afterSeconds: nil), response: nil, environment: request.environment,
                          error: "no answer from APNs: \(error)")
        }
    }
}

extension Array {
    func asyncMap<T>(_ transform: (Element) async -> T) async -> [T] {
        var results: [T] = []
        results.reserveCapacity(count)
        for element in self { results.append(await transform(element)) }
        return results
    }
}
