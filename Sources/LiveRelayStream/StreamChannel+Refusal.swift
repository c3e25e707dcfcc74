import LiveRelayCore

extension StreamChannel {
    /// The forms a `channel` parameter takes, as a refusal lists them.
    public static let forms = "device:<uuid>, session:<id>, channel:<name>, admin or *"

    /// Why `text` names no channel, in one sentence that quotes it: the rule of the form it begins like, or the
    /// forms there are.
    public static func refusal(of text: String) -> String {
        let quoted = "channel \"\(text.excerpt)\""
        if text.hasPrefix("device:") {
            return "\(quoted) does not name a device: device: takes a UUID (device:<uuid>)"
        }
        if text.hasPrefix("session:") {
            return "\(quoted) does not name a session: a session id is 1-\(maximumSessionIDLength) characters"
        }
        if text.hasPrefix("channel:") {
            return "\(quoted) does not name a broadcast channel: a name is 1-64 of A-Z, a-z, 0-9 and _.~%-"
        }
        return "\(quoted) must be \(forms)"
    }
}
