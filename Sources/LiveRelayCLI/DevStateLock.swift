import Foundation

/// One `liverelay dev` per state folder. A second one would find the first's PostgreSQL running, use it, and stop it
/// when it ended, taking the first relay's database away; it also could not listen on the same port.
enum DevStateLock {
    /// Locks `state/dev.lock` for the life of the process (the system releases it at exit, however the process ends),
    /// or stops with the sentence naming the process that holds it.
    static func acquire(state: String) {
        let path = state + "/dev.lock"
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            fail("liverelay: cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let holder = (try? String(contentsOfFile: path, encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let process = holder.flatMap(Int.init).map { " (process \($0))" } ?? ""
            fail("""
                liverelay: liverelay dev is already running with \(state)\(process): stop it first (Ctrl-C), or give \
                this one a folder of its own with --state-directory
                """)
        }
        let pid = Data("\(getpid())\n".utf8)
        _ = ftruncate(descriptor, 0)
        _ = pid.withUnsafeBytes { pwrite(descriptor, $0.baseAddress, $0.count, 0) }
        // The descriptor stays open until the process exits: closing it would release the lock.
    }
}
