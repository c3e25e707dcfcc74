import LiveRelayDevSupport

extension FCMSimulatorFaults {
    /// What is wrong with these settings, empty when nothing is; each setting named by its key in `POST /sim/faults`,
    /// or as `named` turns that key into a flag.
    public func problems(naming named: @escaping (String) -> String = { $0 }) -> [String] {
        var rules = FaultRules(naming: named)
        rules.share("rate503", rate503)
        rules.share("rate429", rate429)
        rules.share("resetRate", resetRate)
        rules.shares("rate503", "rate429", sum: rate503 + rate429)
        rules.atLeast(0, "retryAfterSeconds", retryAfterSeconds)
        rules.atLeast(0, "delayMilliseconds", delayMilliseconds)
        rules.atLeast(1, "accessTokenLifetimeSeconds", accessTokenLifetimeSeconds)
        return rules.problems
    }
}
