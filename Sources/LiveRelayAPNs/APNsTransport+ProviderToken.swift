import Foundation
import LiveRelayCore

extension APNsTransport {
    /// A provider token could not be signed: nothing was sent.
    struct Unsigned: Error {
        var error: any Error
    }

    /// Sends requests with the provider token, and those APNs answered `ExpiredProviderToken` once more with a
    /// newly minted one (device pushes and channel steps alike). Returns every answer, the requests that could not
    /// be resent (no new token could be signed) with why, and the token in use at the end. Throws `Unsigned` when no
    /// token could be signed at all.
    func sendRefreshingExpired<Request, Answer>(
        _ requests: [Request], send: ([Request], String) async -> [Answer], isExpired: (Answer) -> Bool
    ) async throws(Unsigned) -> (answers: [Answer], unsent: [Int: String], token: String) {
        var token: String
        do { token = try client.tokens.token() } catch { throw Unsigned(error: error) }
        var answers = await send(requests, token)
        var unsent: [Int: String] = [:]
        let expired = answers.indices.filter { isExpired(answers[$0]) }
        if !expired.isEmpty {
            do {
                token = try client.tokens.refresh(rejected: token)
                let again = await send(expired.map { requests[$0] }, token)
                for (index, answer) in zip(expired, again) { answers[index] = answer }
            } catch {
                for index in expired { unsent[index] = "cannot sign a new provider token: \(error)" }
            }
        }
        return (answers, unsent, token)
    }
}
