import Foundation
import NIOCore
import NIOHPACK

/// Where requests go: an https:// origin (and a path prefix a simulator may serve under).
public struct HTTP2Origin: Sendable, Hashable {
    public var host: String
    public var port: Int
    /// The URL's path without a trailing slash, to put before every request path.
    public var pathPrefix: String
    /// The `:authority` header.
    public var authority: String

    public init(url text: String) throws {
        guard let url = URL(string: text), url.scheme == "https", let host = url.host, !host.isEmpty else {
            throw HTTP2ClientError.connectFailed("\(text) is not an https:// URL")
        }
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        self.port = url.port ?? 443
        self.pathPrefix = url.path.hasSuffix("/") ? String(url.path.dropLast()) : url.path
        self.authority = url.port.map { "\(host):\($0)" } ?? host
    }

    /// True for a literal IPv4 or IPv6 address (no SNI; the certificate must name the address).
    var isIPAddress: Bool {
        host.contains(":") || host.split(separator: ".").count == 4 && host.allSatisfy { $0.isNumber || $0 == "." }
    }

    /// The pseudo-headers of a request to `path` (after the prefix), the first four of every request's headers.
    ///
    /// The path differs on every request: it stays out of HPACK's dynamic table, so it does not evict the values that
    /// repeat (a bearer token above all), which then go as one-byte indexes instead of being encoded again.
    public func headers(method: String, path: String, capacity: Int = 8) -> HPACKHeaders {
        var headers = HPACKHeaders()
        headers.reserveCapacity(capacity)
        headers.add(name: ":method", value: method)
        headers.add(name: ":scheme", value: "https")
        headers.add(name: ":authority", value: authority)
        headers.add(name: ":path", value: pathPrefix + path, indexing: .nonIndexable)
        return headers
    }
}

/// One request: its origin, full header block (pseudo-headers first) and body.
public struct HTTP2Request: Sendable {
    public var origin: HTTP2Origin
    public var headers: HPACKHeaders
    public var body: ByteBuffer

    public init(origin: HTTP2Origin, headers: HPACKHeaders, body: ByteBuffer) {
        self.origin = origin
        self.headers = headers
        self.body = body
    }
}

/// One answer: status, headers and (up to 16 KB of) body.
public struct HTTP2Response: Sendable, Hashable {
    public var status: Int
    public var headers: HPACKHeaders
    public var body: ByteBuffer?

    public init(status: Int, headers: HPACKHeaders = [:], body: ByteBuffer? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// `retry-after` in seconds, when the server sent one as a number.
    public var retryAfterSeconds: Double? {
        headers.first(name: "retry-after").flatMap { Double($0.trimmingCharacters(in: .whitespaces)) }
    }

    /// The body as text.
    public var bodyText: String { body.map { String(buffer: $0) } ?? "" }
}
