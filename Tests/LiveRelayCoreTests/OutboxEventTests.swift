import LiveRelayCore
import Testing

@Suite("An outbox row's event, read with its kind")
struct OutboxEventTests {
    @Test("each kind's event_type becomes its case, and its text is what was written")
    func parsed() {
        let cases: [(OutboxRow.Kind, String, OutboxEvent)] = [
            (.activity, "update", .activity(.update)), (.activity, "end", .activity(.end)),
            (.activity, "start", .activity(.start)), (.start, "start", .activity(.start)),
            (.channel, "create", .channel(.create)), (.channel, "delete", .channel(.delete)),
            (.widget, "reload", .widgetReload), (.alert, "session.idle", .alert("session.idle")),
        ]
        for (kind, text, expected) in cases {
            let event = OutboxEvent(kind: kind, text: text)
            #expect(event == expected, "\(kind) \(text)")
            #expect(event.text == text)
        }
        #expect(OutboxEvent(kind: .start, text: "start").liveActivityEvent == .start)
        #expect(OutboxEvent(kind: .channel, text: "update").liveActivityEvent == nil)
    }

    @Test("a text outside a kind's set is kept as unrecognised, not read as another event")
    func unrecognised() {
        #expect(OutboxEvent(kind: .activity, text: "reload") == .unrecognised("reload"))
        #expect(OutboxEvent(kind: .channel, text: "end-all") == .unrecognised("end-all"))
        #expect(OutboxEvent(kind: .widget, text: "update") == .unrecognised("update"))
        // An alert's type is whatever its poster named it, even a word another kind uses.
        #expect(OutboxEvent(kind: .alert, text: "update") == .alert("update"))
        #expect(OutboxEvent(kind: .activity, text: "").text == "")
    }
}
