import Foundation
import LiveRelayCore
import LiveRelayHTTP2Client
import NIOCore
import NIOHPACK

/// Delivers to Android through FCM HTTP v1 (`messages:send`) over one long-lived HTTP/2 connection, with the access
/// token all workers share; a 401 mints a new token once and resends.
public struct FCMTransport: DeliveryTransport {
    public var kind: TransportKind { .fcm }

    private let http: HTTP2Client
    private let origin: HTTP2Origin
    private let path: String
    private let tokens: FCMAccessTokenSource

    /// - Parameter eventLoop: where the connection to FCM lives (by default one of the shared group's).
    public init(configuration: FCMConfiguration, tokens: FCMAccessTokenSource,
                eventLoop: (any EventLoop)? = nil) throws {
        self.http = try HTTP2Client(
            caFile: configuration.caFile,
            limits: .init(
                silenceSeconds: configuration.requestTimeoutSeconds, batchSeconds: configuration.batchLimitSeconds),
            eventLoop: eventLoop)
        self.origin = try HTTP2Origin(url: configuration.url)
        let project = configuration.projectID.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed)
            ?? configuration.projectID
        self.path = "/v1/projects/\(project)/messages:send"
        self.tokens = tokens
    }

    public func deliver(_ deliveries: [Delivery]) async -> [DeliveryResult] {
        guard !deliveries.isEmpty else { return [] }
        let now = Int64(Date().timeIntervalSince1970)
        let bodies = deliveries.map { ByteBuffer(bytes: FCMMessage.body(for: $0, now: now).compactBytes) }
        func results(_ outcome: DeliveryOutcome, error: String) -> [DeliveryResult] {
            deliveries.map { DeliveryResult(outcome: outcome, error: error, pushType: FCMMessage.pushType(of: $0)) }
        }
        var accessToken: String
        do {
            accessToken = try await tokens.token()
        } catch {
            return results(.retry(afterSeconds: nil), error: "no FCM access token: \(error)")
        }
        var answers = await http.send(bodies.map { request($0, accessToken: accessToken) })
        var unsent: [Int: String] = [:]
        // 401: the access token was refused (revoked, or expired early): mint a new one once and resend those.
        let refused = answers.indices.filter {
            if case .success(let answer) = answers[$0] { answer.status == 401 } else { false }
        }
        if !refused.isEmpty {
            do {
                accessToken = try await tokens.refresh(rejected: accessToken)
                let again = await http.send(refused.map { request(bodies[$0], accessToken: accessToken) })
                for (index, answer) in zip(refused, again) { answers[index] = answer }
            } catch {
                for index in refused { unsent[index] = "no new FCM access token: \(error)" }
            }
        }
        return deliveries.indices.map { index in
            let pushType = FCMMessage.pushType(of: deliveries[index])
            if let why = unsent[index] {
                return DeliveryResult(outcome: .retry(afterSeconds: nil), error: why, pushType: pushType)
            }
            switch answers[index] {
            case .success(let response):
                let answer = FCMAnswer(response)
                return DeliveryResult(
                    outcome: answer.outcome, providerStatus: answer.status, providerReason: answer.reason,
                    error: answer.message.map { "FCM \(answer.status) \(answer.reason ?? ""): \($0)" },
                    pushType: pushType)
            case .failure(let error):
                return DeliveryResult(
                    outcome: .retry(afterSeconds: nil), error: "no answer from FCM: \(error)", pushType: pushType)
            }
        }
    }

    public func shutdown() async {
        try? await http.shutdown()
    }

    private func request(_ body: ByteBuffer, accessToken: String) -> HTTP2Request {
        var headers = origin.headers(method: "POST", path: path)
        headers.add(name: "authorization", value: "Bearer \(accessToken)")
        headers.add(name: "content-type", value: "application/json; charset=UTF-8")
        return HTTP2Request(origin: origin, headers: headers, body: body)
    }
}
