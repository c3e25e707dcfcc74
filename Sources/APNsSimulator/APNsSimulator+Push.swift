import Foundation
import HTTPTypes
import Hummingbird
import LiveRelayCore
import NIOCore

extension APNsSimulator {
    /// An APNs error answer.
    struct Rejection: Error {
        var status: Int
        var reason: String
        var detail: String
        var retryAfter: Int? = nil
    }

    /// Apple's answer to a refused request: counted, printed (`subject` names the request without a device token),
    /// and JSON `{"reason": …}` (with `timestamp` for a 410), echoing the request's id header when it had one.
    func answer(_ rejection: Rejection, subject: String, echoing id: (name: HTTPField.Name, value: String)? = nil)
        -> Response {
        state.withLock { $0.responses[String(rejection.status), default: 0] += 1 }
        if printPushes {
            let line = "apns-sim: \(rejection.status) \(rejection.reason) \(subject) (\(rejection.detail))\n"
            FileHandle.standardOutput.write(Data(line.utf8))
        }
        var members: [String: JSONValue] = ["reason": .string(rejection.reason)]
        if rejection.status == 410 { members["timestamp"] = .integer(Int64(Date().timeIntervalSince1970 * 1000)) }
        var headers: HTTPFields = [.contentType: "application/json; charset=utf-8"]
        if let id { headers[id.name] = id.value }
        if let retryAfter = rejection.retryAfter { headers[HTTPField.Name("retry-after")!] = String(retryAfter) }
        return Response(status: .init(code: rejection.status), headers: headers,
                        body: .init(byteBuffer: ByteBuffer(bytes: JSONValue.object(members).compactBytes)))
    }

    func handlePush(_ request: Request, context: SimulatorContext, environment: String) async -> Response {
        let faults = state.withLock { $0.faults }
        if faults.delayMilliseconds > 0 { try? await Task.sleep(for: .milliseconds(faults.delayMilliseconds)) }
        let token = context.parameters.get("token") ?? ""
        let connection = context.channel.parent ?? context.channel
        if faults.resetRate > 0, Double.random(in: 0..<1) < faults.resetRate {
            state.withLock { $0.responses["reset", default: 0] += 1 }
            connection.close(promise: nil)
            return Response(status: .serviceUnavailable)  // never reaches the client: its connection is gone
        }
        if faults.goAwayRate > 0, Double.random(in: 0..<1) < faults.goAwayRate {
            state.withLock { $0.responses["goaway", default: 0] += 1 }
            // Hummingbird's connection manager answers this with GOAWAY, a PING, a final GOAWAY naming the last
            // stream it took, and a close once those streams are answered.
            connection.pipeline.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent())
        }
        do {
            let body = try await request.body.collect(upTo: 64 * 1024)
            let push = try validate(request, token: token, environment: environment, body: body, faults: faults)
            let apnsID = push.apnsID, sender = connection.remoteAddress.map { "\($0)" }
            state.withLock { state in
                state.responses["200", default: 0] += 1
                var recorded = push
                recorded.connection = sender
                state.sequence += 1
                recorded.sequence = state.sequence
                state.pushes.append(recorded)
                if state.pushes.count > capacity { state.pushes.removeFirst(state.pushes.count - capacity) }
            }
            if printPushes {
                let line = "apns-sim: 200 \(environment) \(push.pushType ?? "-") \(redactedToken(token)) "
                    + "\(push.payload.compactText)\n"
                FileHandle.standardOutput.write(Data(line.utf8))
            }
            return Response(status: .ok, headers: [HTTPField.Name("apns-id")!: apnsID])
        } catch let rejection as Rejection {
            let name = HTTPField.Name("apns-id")!
            return answer(rejection, subject: redactedToken(token), echoing: request.headers[name].map { (name, $0) })
        } catch {
            state.withLock { $0.responses["413", default: 0] += 1 }
            return Response(status: .init(code: 413), headers: [.contentType: "application/json"],
                            body: .init(byteBuffer: ByteBuffer(string: #"{"reason":"PayloadTooLarge"}"#)))
        }
    }

    /// Apple's checks, in the order APNs applies them (authentication, headers, token, payload), then faults.
    func validate(
        _ request: Request, token: String, environment: String, body: ByteBuffer, faults: SimulatorFaults
    ) throws -> RecordedPush {
        func header(_ name: String) -> String? { request.headers[HTTPField.Name(name)!] }
        guard environment == "production" || environment == "sandbox" else {
            throw Rejection(status: 404, reason: "BadPath", detail: "unknown environment \(environment)")
        }
        let claims = try authenticate(header("authorization"), faults: faults)
        // Headers.
        let pushType = header("apns-push-type")
        let validTypes = [
            "alert", "background", "location", "voip", "complication", "fileprovider", "mdm", "liveactivity",
            "pushtotalk", "widgets",
        ]
        guard let pushType, validTypes.contains(pushType) else {
            throw Rejection(status: 400, reason: "InvalidPushType", detail: "apns-push-type \(pushType ?? "missing")")
        }
        guard let topic = header("apns-topic"), !topic.isEmpty else {
            throw Rejection(status: 400, reason: "MissingTopic", detail: "no apns-topic")
        }
        if pushType == "liveactivity", !topic.hasSuffix(".push-type.liveactivity") {
            throw Rejection(
                status: 400, reason: "InvalidPushType",
                detail: "a liveactivity push needs apns-topic <bundle>.push-type.liveactivity, got \(topic)")
        }
        if pushType != "liveactivity", topic.hasSuffix(".push-type.liveactivity") {
            throw Rejection(status: 400, reason: "TopicDisallowed", detail: "\(topic) is for liveactivity pushes")
        }
        // WidgetKit reloads (iOS 26) have a topic of their own, as Live Activities do.
        if pushType == "widgets", !topic.hasSuffix(".push-type.widgets") {
            throw Rejection(status: 400, reason: "InvalidPushType",
                            detail: "a widgets push needs apns-topic <bundle>.push-type.widgets, got \(topic)")
        }
        if pushType != "widgets", topic.hasSuffix(".push-type.widgets") {
            throw Rejection(status: 400, reason: "TopicDisallowed", detail: "\(topic) is for widgets pushes")
        }
        let priority = header("apns-priority")
        if let priority, !["1", "5", "10"].contains(priority) {
            throw Rejection(status: 400, reason: "BadPriority", detail: "apns-priority \(priority)")
        }
        let expiration = header("apns-expiration")
        if let expiration, Int64(expiration) == nil {
            throw Rejection(status: 400, reason: "BadExpirationDate", detail: "apns-expiration \(expiration)")
        }
        let apnsID = header("apns-id") ?? UUID().uuidString.lowercased()
        guard UUID(uuidString: apnsID) != nil else {
            throw Rejection(status: 400, reason: "BadMessageId", detail: "apns-id \(apnsID)")
        }
        // Token.
        guard !token.isEmpty else { throw Rejection(status: 400, reason: "MissingDeviceToken", detail: "empty token") }
        guard token.allSatisfy(\.isHexDigit) else {
            throw Rejection(status: 400, reason: "BadDeviceToken", detail: "the token is not hexadecimal")
        }
        // Payload.
        guard body.readableBytes > 0 else { throw Rejection(status: 400, reason: "PayloadEmpty", detail: "empty body") }
        guard body.readableBytes <= APNsPayload.maximumSize else {
            throw Rejection(status: 413, reason: "PayloadTooLarge", detail: "\(body.readableBytes) bytes")
        }
        guard let payload = try? JSONValue(parsing: String(buffer: body)), case .object(let root) = payload,
              case .object(let aps)? = root["aps"] else {
            throw Rejection(
                status: 400, reason: "BadPayload", detail: "the body is not a JSON object with an aps dictionary")
        }
        if pushType == "liveactivity" { try Self.validateLiveActivity(aps) }
        if pushType == "widgets", payload != APNsPayload.widgetReload {
            throw Rejection(status: 400, reason: "BadPayload",
                            detail: "a widgets push carries exactly {\"aps\":{\"content-changed\":true}}")
        }
        // Faults, then the token's fate.
        if let reason = faults.tokenErrors[token] {
            throw Rejection(
                status: SimulatorFaults.status(for: reason), reason: reason, detail: "fault injected for this token")
        }
        if environment == "production", faults.sandboxTokens.contains(token) {
            throw Rejection(status: 400, reason: "BadDeviceToken", detail: "this token belongs to the sandbox")
        }
        let roll = Double.random(in: 0..<1)
        if roll < faults.rate503 {
            throw Rejection(
                status: 503, reason: "ServiceUnavailable", detail: "fault injected",
                retryAfter: faults.retryAfterSeconds)
        }
        if roll < faults.rate503 + faults.rate429 {
            throw Rejection(
                status: 429, reason: "TooManyRequests", detail: "fault injected",
                retryAfter: faults.retryAfterSeconds ?? 1)
        }
        return RecordedPush(
            sequence: 0, token: token, environment: environment, pushType: pushType, topic: topic, priority: priority,
            expiration: expiration, apnsID: apnsID.lowercased(), providerTokenIssuedAt: claims.issuedAt,
            receivedAt: Date().timeIntervalSince1970, payload: payload)
    }

    /// The provider token's checks, as APNs makes them for every request (pushes, channel management, broadcasts).
    func authenticate(_ authorization: String?, faults: SimulatorFaults) throws -> ProviderToken {
        guard let authorization, authorization.lowercased().hasPrefix("bearer ") else {
            throw Rejection(status: 403, reason: "MissingProviderToken", detail: "no authorization: bearer header")
        }
        let jwt = String(authorization.dropFirst("bearer ".count))
        let known = state.withLock { $0.providerTokens[jwt] }
        guard let claims = known ?? ProviderToken(verifying: jwt, key: credentials.publicKey) else {
            throw Rejection(status: 403, reason: "InvalidProviderToken", detail: "the ES256 signature does not verify")
        }
        if let keyID = credentials.keyID, claims.keyID != keyID {
            throw Rejection(status: 403, reason: "InvalidProviderToken", detail: "kid \(claims.keyID) is not \(keyID)")
        }
        if let teamID = credentials.teamID, claims.teamID != teamID {
            throw Rejection(status: 403, reason: "InvalidProviderToken",
                            detail: "iss \(claims.teamID) is not \(teamID)")
        }
        let now = Int64(Date().timeIntervalSince1970)
        let revoked = faults.expireProviderTokensIssuedBefore.map { claims.issuedAt < $0 } ?? false
        if now - claims.issuedAt > 3600 || revoked {
            throw Rejection(status: 403, reason: "ExpiredProviderToken", detail: "iat \(claims.issuedAt) is too old")
        }
        if claims.issuedAt - now > 300 {
            throw Rejection(status: 403, reason: "InvalidProviderToken",
                            detail: "iat \(claims.issuedAt) is in the future")
        }
        if known == nil { state.withLock { $0.providerTokens[jwt] = claims } }
        return claims
    }

    /// The `aps` of a Live Activity push as Apple documents it.
    static func validateLiveActivity(_ aps: [String: JSONValue]) throws {
        func reject(_ detail: String) -> Rejection { Rejection(status: 400, reason: "BadPayload", detail: detail) }
        guard case .string(let event)? = aps["event"], ["update", "end", "start"].contains(event) else {
            throw reject("aps.event must be update, end or start")
        }
        guard case .integer? = aps["timestamp"] else { throw reject("aps.timestamp must be epoch seconds") }
        switch aps["content-state"] {
        case .object?: break
        case nil where event == "end": break
        default: throw reject("aps.content-state must be a dictionary")
        }
        for key in ["stale-date", "dismissal-date"] {
            guard let value = aps[key] else { continue }
            guard case .integer = value else { throw reject("aps.\(key) must be epoch seconds") }
        }
        if event == "start" {
            guard case .string? = aps["attributes-type"], case .object? = aps["attributes"] else {
                throw reject("a start needs aps.attributes-type and aps.attributes")
            }
        }
    }
}
