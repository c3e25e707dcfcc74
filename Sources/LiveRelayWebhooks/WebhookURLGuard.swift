import Foundation
import LiveRelayCore
import NIOCore
import NIOPosix

/// Decides whether a webhook URL may be called: an http(s) URL without credentials whose host resolves only to
/// public addresses (or any, when the operator allows private ones). Used when an endpoint is registered, and by the
/// webhook transport before every batch of requests to it (a name may resolve elsewhere later), which then connects
/// to the very address this check saw (`target(of:)`), never to a second lookup's answer.
public struct WebhookURLGuard: WebhookURLCheck {
    /// Where a URL's requests go, once checked.
    public enum Target: Sendable, Equatable {
        /// Why it may not be called, in a sentence.
        case refused(String)
        /// Its host (as the URL spells it, without brackets) and the addresses it resolved to, each checked, in
        /// text and in the resolver's order.
        case allowed(host: String, addresses: [String])
    }

    public var allowPrivate: Bool
    /// The host's addresses (4 or 16 bytes each). The system's resolver, unless a test gives its own.
    let resolve: @Sendable (String) async throws -> [[UInt8]]

    public init(allowPrivate: Bool) {
        self.init(allowPrivate: allowPrivate, resolve: Self.systemResolve)
    }

    init(allowPrivate: Bool, resolve: @escaping @Sendable (String) async throws -> [[UInt8]]) {
        self.allowPrivate = allowPrivate
        self.resolve = resolve
    }

    /// Why the URL is refused, in a sentence; nil when it may be called. With private networks allowed, the shape
    /// alone is checked: the name need not resolve yet when an endpoint is registered.
    public func refusal(of text: String) async -> String? {
        if allowPrivate { return Self.host(of: text).refusal }
        if case .refused(let reason) = await target(of: text) { return reason }
        return nil
    }

    /// The addresses a request to the URL may go to: the host resolved once, and every address checked (unless
    /// private networks are allowed).
    public func target(of text: String) async -> Target {
        let (name, shapeRefusal) = Self.host(of: text)
        guard let name else { return .refused(shapeRefusal ?? "url is not a URL") }
        let addresses: [[UInt8]]
        do {
            addresses = try await resolve(name)
        } catch {
            return .refused("url's host \(name) does not resolve")
        }
        // IPv4 first: a pinned client tries one address at a time (no Happy Eyeballs race), and a receiver's IPv6
        // address is the one more often unreachable from a relay (a container without IPv6 routes); each failure
        // would cost an event's attempt before the next address is tried.
        let texts = (addresses.filter { $0.count == 4 } + addresses.filter { $0.count != 4 }).compactMap(Self.text(of:))
        guard !texts.isEmpty else { return .refused("url's host \(name) does not resolve") }
        if !allowPrivate {
            for address in addresses {
                if let reason = AddressPolicy.refusal(of: address) {
                    return .refused("""
                        url's host \(name) resolves to a \(reason) address; set LIVERELAY_WEBHOOK_ALLOW_PRIVATE=true \
                        to allow webhooks to private networks
                        """)
                }
            }
        }
        return .allowed(host: name, addresses: texts)
    }

    /// The URL's host without IPv6 brackets, or why the URL has none a webhook may use.
    static func host(of text: String) -> (name: String?, refusal: String?) {
        guard text.utf8.count <= 2048, let url = URLComponents(string: text),
              let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
              let host = url.host, !host.isEmpty else {
            return (nil, "url must be an http:// or https:// URL of at most 2048 characters")
        }
        guard url.user == nil, url.password == nil else { return (nil, "url must not carry a user name or password") }
        return (host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host, nil)
    }

    /// An address's usual text (`192.0.2.1`, `2001:db8::1`).
    static func text(of bytes: [UInt8]) -> String? {
        (try? SocketAddress(packedIPAddress: ByteBuffer(bytes: bytes), port: 0))?.ipAddress
    }

    /// The host's addresses (4 or 16 bytes each), resolved on NIO's blocking-I/O thread pool.
    @Sendable static func systemResolve(_ host: String) async throws -> [[UInt8]] {
        try await NIOThreadPool.singleton.runIfActive {
            var hints = addrinfo()
            hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
            var list: UnsafeMutablePointer<addrinfo>?
            guard getaddrinfo(host, nil, &hints, &list) == 0, let first = list else {
                throw ResolutionError()
            }
            defer { freeaddrinfo(first) }
            var addresses: [[UInt8]] = []
            var cursor: UnsafeMutablePointer<addrinfo>? = first
            while let entry = cursor {
                if let address = entry.pointee.ai_addr {
                    switch Int32(address.pointee.sa_family) {
                    case AF_INET:
                        address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                            addresses.append(withUnsafeBytes(of: $0.pointee.sin_addr) { Array($0) })
                        }
                    case AF_INET6:
                        address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                            addresses.append(withUnsafeBytes(of: $0.pointee.sin6_addr) { Array($0) })
                        }
                    default: break
                    }
                }
                cursor = entry.pointee.ai_next
            }
            return addresses
        }
    }

    struct ResolutionError: Error {}
}
