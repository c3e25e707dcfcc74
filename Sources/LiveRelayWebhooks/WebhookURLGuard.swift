import Foundation
import LiveRelayCore
import NIOCore
import NIOPosix

/// Decides whether a webhook URL may be called: an http(s) URL without credentials whose host resolves only to
/// public addresses (or any, when the operator allows private ones). Used when an endpoint is registered and
/// before every batch of requests to it (a name may resolve elsewhere later).
public struct WebhookURLGuard: WebhookURLCheck {
    public var allowPrivate: Bool

    public init(allowPrivate: Bool) { self.allowPrivate = allowPrivate }

    /// Why the URL is refused, in a sentence; nil when it may be called.
    public func refusal(of text: String) async -> String? {
        guard text.utf8.count <= 2048, let url = URLComponents(string: text),
              let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
              let host = url.host, !host.isEmpty else {
            return "url must be an http:// or https:// URL of at most 2048 characters"
        }
        guard url.user == nil, url.password == nil else { return "url must not carry a user name or password" }
        if allowPrivate { return nil }
        let name = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        let addresses: [[UInt8]]
        do {
            addresses = try await Self.resolve(name)
        } catch {
            return "url's host \(name) does not resolve"
        }
        guard !addresses.isEmpty else { return "url's host \(name) does not resolve" }
        for address in addresses {
            if let reason = AddressPolicy.refusal(of: address) {
                return """
                    url's host \(name) resolves to a \(reason) address; set LIVERELAY_WEBHOOK_ALLOW_PRIVATE=true to \
                    allow webhooks to private networks
                    """
            }
        }
        return nil
    }

    /// The host's addresses (4 or 16 bytes each), resolved on NIO's blocking-I/O thread pool.
    static func resolve(_ host: String) async throws -> [[UInt8]] {
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
