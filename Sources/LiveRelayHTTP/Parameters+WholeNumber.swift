import Hummingbird

extension Parameters {
    /// A whole-number parameter of the query string (`limit`, `offset`), `defaultValue` when absent. Every list route
    /// reads its numbers here, so a bad one gets the same sentence, with the range, whichever route it came to.
    func wholeNumber(_ name: String, default defaultValue: Int, range: ClosedRange<Int>) throws -> Int {
        guard let text = get(name) else { return defaultValue }
        guard let number = Int(text), range.contains(number) else {
            throw APIError.badRequest("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return number
    }
}
