/// The URLs a webhook endpoint may be registered with, as openapi.json's `url` pattern says (a test keeps the two the
/// same): http(s), a host name or IPv4 address (an IPv6 endpoint by its name: a bracketed literal is where URL
/// parsers disagree), an optional port, then path and query in plain ASCII; no user name, password or fragment.
/// Checked at registration only, so that an endpoint stored before this rule keeps receiving its events.
public enum WebhookURLShape {
    public static let pattern = #"^https?://[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*(:[0-9]{1,5})?"#
        + #"(/([A-Za-z0-9._~!$&'()*+,;=:@/-]|%[0-9A-Fa-f]{2})*)?"#
        + #"(\?([A-Za-z0-9._~!$&'()*+,;=:@/?-]|%[0-9A-Fa-f]{2})*)?$"#
    nonisolated(unsafe) static let shape = try! Regex(pattern)

    /// Why the URL does not have the shape, in a sentence; nil when it has.
    public static func refusal(of url: String) -> String? {
        url.wholeMatch(of: shape) != nil ? nil
            : "url must be an http(s) URL with a host name or IPv4 address, an optional port, path and query in plain "
                + "ASCII (percent-encode the rest), and no user name, password or fragment"
    }
}
