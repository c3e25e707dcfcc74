import LiveRelayDevSupport

extension FCMSimulatorFaults: CommonFaults {
    /// What is wrong with these settings, empty when nothing is; each setting named by its key in `POST /sim/faults`,
    /// or as `named` turns that key into a flag.
    public func problems(naming named: @escaping (String) -> String = { $0 }) -> [String] {
        var rules = FaultRules(naming: named)
        rules.common(self)
        rules.atLeast(1, "accessTokenLifetimeSeconds", accessTokenLifetimeSeconds)
        return rules.problems
    }
}
