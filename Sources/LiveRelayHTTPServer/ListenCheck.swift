import Foundation
import NIOCore
import NIOPosix

/// Whether the server could listen on an address, checked before anything starts: a port another process holds then
/// stops start-up with one sentence, where the bind would otherwise fail after the relay's workers had started, with
/// NIO's `bind(descriptor:ptr:bytes:)` text.
public enum ListenCheck {
    /// The address cannot be listened on, and why.
    public struct Unavailable: Error, CustomStringConvertible {
        public var host: String
        public var port: Int
        public var reason: String
        public var description: String { "cannot listen on \(host):\(port): \(reason)" }
    }

    /// Binds `host:port` as the server will (address reuse on), and lets it go at once. Port 0 always passes.
    public static func check(host: String, port: Int) async throws {
        guard port != 0 else { return }
        let bootstrap = ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .serverChannelOption(.socketOption(.so_reuseaddr), value: 1)
        do {
            let channel = try await bootstrap.bind(host: host, port: port).get()
            try await channel.close()
        } catch let error as IOError {
            let reason = String(cString: strerror(error.errnoCode))
            throw Unavailable(host: host, port: port, reason: error.errnoCode == EADDRINUSE
                ? "\(reason) (another process listens there; set PORT to another port)" : reason)
        } catch let error as SocketAddressError.UnknownHost {
            throw Unavailable(host: host, port: port, reason: "HOST does not resolve (\(error.errorDescription))")
        } catch {
            throw Unavailable(host: host, port: port, reason: "\(error)")
        }
    }
}
