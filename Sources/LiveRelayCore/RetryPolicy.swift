/// Exponential backoff with jitter, bounded by attempts and by the age of a delivery.
public struct RetryPolicy: Sendable, Hashable {
    public var initialDelaySeconds: Double
    public var maximumDelaySeconds: Double
    public var maximumAttempts: Int
    public var maximumAgeSeconds: Double

    public init(
        initialDelaySeconds: Double = 0.25, maximumDelaySeconds: Double = 60,
        maximumAttempts: Int = 12, maximumAgeSeconds: Double = 3600
    ) {
        self.initialDelaySeconds = initialDelaySeconds
        self.maximumDelaySeconds = maximumDelaySeconds
        self.maximumAttempts = maximumAttempts
        self.maximumAgeSeconds = maximumAgeSeconds
    }

    /// The bounds of the delay before attempt `attempt + 1`, after `attempt` failed attempts (1-based).
    public func delayBounds(afterAttempt attempt: Int) -> ClosedRange<Double> {
        let exponent = Double(max(0, min(attempt - 1, 30)))
        let ceiling = min(maximumDelaySeconds, initialDelaySeconds * pow2(exponent))
        return (ceiling / 2)...ceiling
    }

    /// The delay before the next attempt, or nil when the delivery has to give up.
    /// - Parameters:
    ///   - attempt: attempts made so far, including the one that just failed.
    ///   - ageSeconds: how long ago the delivery was enqueued.
    ///   - retryAfterSeconds: APNs' `retry-after`, honoured as a lower bound.
    ///   - random: a number in 0...1 (injected so tests control jitter).
    public func nextDelay(afterAttempt attempt: Int, ageSeconds: Double, retryAfterSeconds: Double?,
                          random: Double) -> Double? {
        guard attempt < maximumAttempts else { return nil }
        let bounds = delayBounds(afterAttempt: attempt)
        var delay = bounds.lowerBound + (bounds.upperBound - bounds.lowerBound) * min(max(random, 0), 1)
        if let retryAfterSeconds, retryAfterSeconds > delay {
            delay = min(retryAfterSeconds, maximumAgeSeconds)
        }
        guard ageSeconds + delay <= maximumAgeSeconds else { return nil }
        return delay
    }

    private func pow2(_ exponent: Double) -> Double {
        var result = 1.0
        for _ in 0..<Int(exponent) { result *= 2 }
        return result
    }
}

/// What becomes of a delivery that did not get through: another attempt later, or the end, with the sentence that
/// `delivery_log` (or the webhook log) records.
public enum RetryDecision: Sendable, Hashable {
    case retry(delaySeconds: Double, note: String)
    case giveUp(note: String)
}

extension RetryPolicy {
    /// Decides after a failed attempt; one wording for every queue.
    /// - Parameters:
    ///   - attempts: attempts made before this one.
    ///   - enqueuedAt: when the delivery (its oldest row) was queued, epoch seconds; `now` likewise.
    ///   - random: a number in 0...1 for the jitter.
    public func decide(attempts: Int, enqueuedAt: Double, now: Double, retryAfterSeconds: Double?, random: Double,
                       error: String) -> RetryDecision {
        let attempt = attempts + 1
        guard let delay = nextDelay(afterAttempt: attempt, ageSeconds: now - enqueuedAt,
                                    retryAfterSeconds: retryAfterSeconds, random: random) else {
            return .giveUp(note: "gave up after \(attempt) attempts: \(error)")
        }
        return .retry(delaySeconds: delay, note: "\(error); next attempt in \(Int(delay * 1000)) ms")
    }
}
