import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One HTTP/1.1 connection on a plain socket, for what an HTTP client library hides: a connection left idle after
/// its answer, a stream read byte by byte, a client that vanishes without a word.
final class RawConnection: @unchecked Sendable {
    struct Failure: Error, CustomStringConvertible { var description: String }

    private var descriptor: Int32
    private let lock = NSLock()
    private var bytes: [UInt8] = []
    private var ended = false

    init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw Failure(description: "socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let result = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            Glibc.close(descriptor)
            throw Failure(description: "connect to port \(port) failed: errno \(errno)")
        }
    }

    /// Sends `text` as it is.
    func send(_ text: String) throws {
        var remaining = Array(text.utf8)[...]
        while !remaining.isEmpty {
            let written = remaining.withUnsafeBytes { Glibc.write(descriptor, $0.baseAddress, $0.count) }
            guard written > 0 else { throw Failure(description: "write failed: errno \(errno)") }
            remaining = remaining.dropFirst(written)
        }
    }

    /// Sends a GET with the given headers on this (kept-alive) connection.
    func get(_ path: String, headers: [String] = []) throws {
        try send((["GET \(path) HTTP/1.1", "Host: relay"] + headers).joined(separator: "\r\n") + "\r\n\r\n")
    }

    /// Sends a POST with a JSON body on this connection.
    func post(_ path: String, json: String) throws {
        try send("POST \(path) HTTP/1.1\r\nHost: relay\r\nContent-Type: application/json\r\n"
                 + "Content-Length: \(json.utf8.count)\r\n\r\n\(json)")
    }

    /// Everything received so far.
    var text: String { lock.withLock { String(decoding: bytes, as: UTF8.self) } }

    /// True once the server closed the connection.
    var isClosedByServer: Bool { lock.withLock { ended } }

    /// Reads until `condition` holds for the text so far or the server closes; false on timeout.
    @discardableResult
    func read(timeout: Duration = .seconds(15), until condition: (String) -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        while ContinuousClock.now < deadline {
            if condition(text) { return true }
            if isClosedByServer { return condition(text) }
            if try !pump() { try await Task.sleep(for: .milliseconds(10)) }
        }
        return condition(text)
    }

    /// Reads until the server closes the connection; false on timeout.
    func readUntilClosed(timeout: Duration = .seconds(15)) async throws -> Bool {
        try await read(timeout: timeout) { _ in false }
        return isClosedByServer
    }

    /// Reads what is waiting without blocking; returns whether anything arrived.
    private func pump() throws -> Bool {
        var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        guard poll(&poller, 1, 0) > 0 else { return false }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = buffer.withUnsafeMutableBytes { Glibc.read(descriptor, $0.baseAddress, $0.count) }
        lock.withLock {
            if count > 0 { bytes += buffer[..<count] } else { ended = true }
        }
        return true
    }

    /// The client goes away: the socket is closed and never read again.
    func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }

    deinit { close() }
}
