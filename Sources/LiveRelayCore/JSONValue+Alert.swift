/// The alert an update or a start may carry (`PATCH /v1/live-activities/{id}`, a channel's start, the MCP tool
/// `update_live_activity`): one rule for every way in, each saying it in its own error type.
extension JSONValue {
    /// Why this value, given as the alert `name`, cannot go out with a push, or nil when it can: an alert is a JSON
    /// object whose `title`, `subtitle` and `body`, when given, are strings (what APNs shows).
    public func alertProblem(named name: String) -> String? {
        guard let members = objectValue else {
            return "\(name) must be a JSON object, like {\"title\": \"Delivered\", \"body\": \"At the front door\"}"
        }
        for key in ["title", "subtitle", "body"] where members[key].map({ $0.stringValue == nil }) ?? false {
            return "\(name).\(key) must be a string"
        }
        return nil
    }
}
