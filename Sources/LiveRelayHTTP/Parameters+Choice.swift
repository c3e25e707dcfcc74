import Hummingbird
import LiveRelayCore

extension Parameters {
    /// One of an enum's raw values, nil when the parameter is absent or empty (`?status=` is no filter).
    func choice<Choice: RawRepresentable & CaseIterable>(_ name: String, as type: Choice.Type) throws -> Choice?
        where Choice.RawValue == String {
        guard let text = try self.text(name), !text.isEmpty else { return nil }
        guard let value = Choice(rawValue: text) else {
            throw APIError.badRequest(Choice.refusal(of: text, named: name))
        }
        return value
    }
}
