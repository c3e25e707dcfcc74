extension StreamChannel {
    /// The forms a `channel` parameter takes, as a refusal lists them.
    public static let forms = "device:<uuid>, session:<id>, channel:<name>, admin or *"

    /// Why a `channel` parameter names no channel, in one sentence that quotes it.
    public struct Refusal: Error, Sendable {
        public var sentence: String

        init(_ sentence: String) {
            self.sentence = sentence
        }
    }
}
