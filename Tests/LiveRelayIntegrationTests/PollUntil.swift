/// Checks `condition` every `interval` until it holds (true) or `timeout` passes (false): the one deadline loop behind
/// the tests' waits, each of which says what it waited for when it times out.
func pollUntil(timeout: Duration, every interval: Duration = .milliseconds(10),
               _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: interval)
    }
    return false
}
