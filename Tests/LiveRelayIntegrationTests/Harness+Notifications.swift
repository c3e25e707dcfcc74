import PostgresNIO

extension Harness {
    /// The payloads of the relay's wake-up channel (`liverelay_wake`) sent while `body` runs. Notifications arrive in
    /// commit order: once a probe sent after `body` is heard, every writer's notification of `body` has been.
    func wakeUpNotifications(during body: @Sendable () async throws -> Void) async throws -> [String] {
        var heard: [String] = []
        try await withConnection { listener in
            heard = try await listener.listen(on: "liverelay_wake") { notifications in
                try await withThrowingTaskGroup(of: [String].self) { group in
                    group.addTask {
                        var payloads: [String] = []
                        for try await notification in notifications {
                            if notification.payload == "probe" { break }
                            payloads.append(notification.payload)
                        }
                        return payloads
                    }
                    try await body()
                    try await sql("SELECT pg_notify('liverelay_wake', 'probe')")
                    return try await group.next() ?? []
                }
            }
        }
        return heard
    }
}
