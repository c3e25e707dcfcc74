extension StringProtocol {
    /// The text as an error sentence quotes what a client sent: whole up to 80 characters, else its first 80 and "…"
    /// (a sentence is for a person, and a query string or path can be kilobytes long).
    public var excerpt: String {
        count > 80 ? prefix(80) + "…" : String(self)
    }
}
