/// The faults both simulators inject, by the names `POST /sim/faults` gives them.
public protocol CommonFaults {
    var rate503: Double { get }
    var rate429: Double { get }
    var resetRate: Double { get }
    var retryAfterSeconds: Int? { get }
    var delayMilliseconds: Int { get }
}

/// The rules the simulators' fault settings follow, whether they come from flags or `POST /sim/faults`: each
/// broken rule is one sentence naming the setting, so a typo (`--rate-503 20` for 20%) is refused instead of making
/// every request fail.
public struct FaultRules {
    public private(set) var problems: [String] = []
    /// How a sentence names a setting: its JSON key, or the flag that sets it.
    let named: (String) -> String

    public init(naming named: @escaping (String) -> String) {
        self.named = named
    }

    /// The rules of the faults both simulators inject.
    public mutating func common(_ faults: some CommonFaults) {
        share("rate503", faults.rate503)
        share("rate429", faults.rate429)
        share("resetRate", faults.resetRate)
        shares("rate503", "rate429", sum: faults.rate503 + faults.rate429)
        atLeast(0, "retryAfterSeconds", faults.retryAfterSeconds)
        atLeast(0, "delayMilliseconds", faults.delayMilliseconds)
    }

    /// A share of requests: 0 to 1.
    public mutating func share(_ name: String, _ value: Double) {
        guard !(0...1).contains(value) else { return }
        problems.append("\(named(name)) is a share of requests from 0 to 1 (0.2 is 20%), not \(value)")
    }

    /// Shares that split the same requests: together at most 1.
    public mutating func shares(_ first: String, _ second: String, sum: Double) {
        guard sum > 1, problems.isEmpty else { return }
        problems.append("\(named(first)) and \(named(second)) together are more than every request (\(sum))")
    }

    /// A count of seconds or milliseconds: `minimum` or more (nil is "not set").
    public mutating func atLeast(_ minimum: Int, _ name: String, _ value: Int?) {
        guard let value, value < minimum else { return }
        problems.append("\(named(name)) must be \(minimum) or more, not \(value)")
    }

    /// A `--port`: 0 (any free port) to 65535.
    public static func portProblem(_ port: Int) -> String? {
        (0...65535).contains(port) ? nil : "--port must be from 0 (any free port) to 65535, not \(port)"
    }
}
