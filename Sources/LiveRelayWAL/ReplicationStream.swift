import Crypto
import Foundation
import NIOCore
import NIOPosix

/// Where and as whom to open a replication connection (from `DATABASE_URL`).
public struct ReplicationEndpoint: Sendable {
    public var host: String
    public var port: Int
    public var user: String
    public var password: String?
    public var database: String?
    public var applicationName: String
    public var connectTimeout: Duration
    /// nil: the connection stays in clear (`sslmode=disable`).
    public var tls: ReplicationTLS?

    public init(host: String, port: Int, user: String, password: String?, database: String?,
                applicationName: String = "liverelay-wal", connectTimeout: Duration = .seconds(5),
                tls: ReplicationTLS? = nil) {
        self.host = host
        self.port = port
        self.user = user
        self.password = password
        self.database = database
        self.applicationName = applicationName
        self.connectTimeout = connectTimeout
        self.tls = tls
    }
}

/// A physical replication connection (PostgreSQL's streaming replication protocol), read for nothing but where the
/// write-ahead log has got to and what it says: no slot, so the server keeps no WAL for it, and nothing it reports
/// holds a writer back (its replies say everything received was flushed, and the watcher uses it only while no
/// synchronous standby is configured).
public enum ReplicationStream {
    /// What the server said before streaming: its timeline and how far its WAL is flushed, and its version.
    public struct Start: Sendable {
        public var timeline: UInt32
        public var flushed: LSN
        public var serverVersion: String
    }

    /// The silence after which the connection counts as dead: the server sends a keepalive at least every half of
    /// its `wal_sender_timeout` (60 s by default) while it has nothing to send.
    public static let silenceLimit = 90

    /// Connects (over TLS when `endpoint.tls` asks for it), logs in, reads the server's position, asks `ready` where to
    /// start, then streams WAL to `receive` (its first byte's position, and the bytes) until the connection ends, which
    /// it does by throwing.
    public static func run(
        _ endpoint: ReplicationEndpoint, on group: any EventLoopGroup,
        ready: (Start) async throws -> LSN,
        receive: (LSN, ByteBufferView) async throws -> Void
    ) async throws {
        let (channel, negotiated) = try await ClientBootstrap(group: group)
            .connectTimeout(.nanoseconds(Int64(endpoint.connectTimeout.components.seconds) * 1_000_000_000))
            .connect(host: endpoint.host, port: endpoint.port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    let pipeline = channel.pipeline.syncOperations
                    try pipeline.addHandler(IdleStateHandler(readTimeout: .seconds(Int64(silenceLimit))))
                    var negotiated: EventLoopFuture<Bool>?
                    if let tls = endpoint.tls {
                        let promise = channel.eventLoop.makePromise(of: Bool.self)
                        try pipeline.addHandler(TLSNegotiator(tls, promise: promise))
                        negotiated = promise.futureResult
                    }
                    try pipeline.addHandler(ByteToMessageHandler(BackendMessageDecoder()))
                    try pipeline.addHandler(SilenceCloser())
                    let wrapped = try NIOAsyncChannel<BackendMessage, ByteBuffer>(wrappingChannelSynchronously: channel)
                    return (wrapped, negotiated)
                }
            }
        try await channel.executeThenClose { inbound, outbound in
            // Whether TLS was agreed (false for sslmode=disable, and for prefer when the server has none).
            let encrypted = try await negotiated?.get() ?? false
            var messages = inbound.makeAsyncIterator()
            func next(_ what: String) async throws -> BackendMessage {
                guard let message = try await messages.next() else { throw ReplicationFailure.closed(while: what) }
                if message.type == BackendMessage.error { throw message.refusal }
                return message
            }
            try await outbound.write(FrontendMessage.startup(
                user: endpoint.user, database: endpoint.database, applicationName: endpoint.applicationName))
            let version = try await logIn(
                endpoint, encrypted: encrypted, next: next, write: { try await outbound.write($0) })

            try await outbound.write(FrontendMessage.query("IDENTIFY_SYSTEM"))
            var identity: [String?] = []
            while true {
                let message = try await next("identifying the system")
                if message.type == BackendMessage.dataRow { identity = message.columns }
                if message.type == BackendMessage.ready { break }
            }
            guard identity.count >= 3, let timeline = identity[1].flatMap({ UInt32($0) }),
                  let flushed = identity[2].flatMap({ LSN(walText: $0) })
            else { throw ReplicationFailure.brokenStream }
            let start = try await ready(Start(timeline: timeline, flushed: flushed, serverVersion: version))

            try await outbound.write(FrontendMessage.query(
                "START_REPLICATION PHYSICAL \(start.walText) TIMELINE \(timeline)"))
            let answer = try await next("starting replication")
            guard answer.type == BackendMessage.copyBoth else {
                throw ReplicationFailure.unexpectedMessage(answer.type, while: "starting replication")
            }
            var received = start
            while true {
                let message = try await next("streaming")
                guard message.type == BackendMessage.copyData else {
                    if message.type == BackendMessage.copyDone { throw ReplicationFailure.closed(while: "streaming") }
                    continue
                }
                var body = message.body
                switch body.readInteger(as: UInt8.self) {
                case UInt8(ascii: "w"):  // XLogData: start, end, send time, the WAL bytes
                    guard let first = body.readInteger(as: UInt64.self), body.readInteger(as: UInt64.self) != nil,
                          body.readInteger(as: Int64.self) != nil
                    else { throw ReplicationFailure.brokenStream }
                    received = first + LSN(body.readableBytes)
                    try await receive(first, body.readableBytesView)
                case UInt8(ascii: "k"):  // keepalive: the server's end of WAL, its time, whether it wants a reply
                    guard body.readInteger(as: UInt64.self) != nil, body.readInteger(as: Int64.self) != nil,
                          let reply = body.readInteger(as: UInt8.self)
                    else { throw ReplicationFailure.brokenStream }
                    if reply != 0 {
                        try await outbound.write(FrontendMessage.standbyStatus(
                            position: received, microsecondsSince2000: microsecondsSince2000()))
                    }
                default:
                    continue
                }
            }
        }
    }

    /// The login, up to ReadyForQuery: trust, MD5 or SCRAM-SHA-256, and a clear-text password only over TLS.
    /// Returns the server's version.
    static func logIn(
        _ endpoint: ReplicationEndpoint, encrypted: Bool, next: (String) async throws -> BackendMessage,
        write: (ByteBuffer) async throws -> Void
    ) async throws -> String {
        var scram: SCRAMClient?
        var version = ""
        while true {
            let message = try await next("logging in")
            var body = message.body
            switch message.type {
            case BackendMessage.authentication:
                let code = body.readInteger(as: Int32.self) ?? -1
                switch code {
                case 0: continue
                case 3:
                    guard encrypted else { throw ReplicationFailure.cleartextPasswordWithoutTLS }
                    guard let password = endpoint.password else { throw ReplicationFailure.passwordRequired }
                    try await write(FrontendMessage.password(password))
                case 5:  // MD5: "md5" + md5(md5(password + user) + salt)
                    guard let password = endpoint.password else { throw ReplicationFailure.passwordRequired }
                    guard let salt = body.readBytes(length: 4) else { throw ReplicationFailure.brokenStream }
                    let inner = hex(Insecure.MD5.hash(data: Array((password + endpoint.user).utf8)))
                    let outer = hex(Insecure.MD5.hash(data: Array(inner.utf8) + salt))
                    try await write(FrontendMessage.password("md5" + outer))
                case 10:  // SASL: the mechanisms offered
                    var mechanisms: [String] = []
                    while let name = body.readNullTerminatedString(), !name.isEmpty { mechanisms.append(name) }
                    guard mechanisms.contains(SCRAMClient.mechanism) else {
                        throw ReplicationFailure.unsupportedAuthentication(code)
                    }
                    guard let password = endpoint.password else { throw ReplicationFailure.passwordRequired }
                    let client = SCRAMClient(password: password)
                    scram = client
                    try await write(FrontendMessage.saslInitial(mechanism: SCRAMClient.mechanism, client.first))
                case 11:
                    guard var client = scram else { throw ReplicationFailure.brokenStream }
                    let final = try client.final(answering: body.readString(length: body.readableBytes) ?? "")
                    scram = client
                    try await write(FrontendMessage.saslResponse(final))
                case 12:
                    guard let client = scram else { throw ReplicationFailure.brokenStream }
                    try client.verify(serverFinal: body.readString(length: body.readableBytes) ?? "")
                default:
                    throw ReplicationFailure.unsupportedAuthentication(code)
                }
            case UInt8(ascii: "S"):  // ParameterStatus
                if body.readNullTerminatedString() == "server_version" {
                    version = body.readNullTerminatedString() ?? ""
                }
            case BackendMessage.ready:
                return version
            default:
                continue
            }
        }
    }

    static func hex(_ digest: some Sequence<UInt8>) -> String {
        digest.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined()
    }

    static func microsecondsSince2000() -> Int64 {
        Int64((Date().timeIntervalSince1970 - 946_684_800) * 1_000_000)
    }
}

/// Closes a connection that has been silent for `ReplicationStream.silenceLimit`, with that as its error.
final class SilenceCloser: ChannelInboundHandler, Sendable {
    typealias InboundIn = BackendMessage
    typealias InboundOut = BackendMessage

    func channelRead(context: ChannelHandlerContext, data: NIOAny) { context.fireChannelRead(data) }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let idle = event as? IdleStateHandler.IdleStateEvent, idle == .read {
            context.fireErrorCaught(ReplicationFailure.silent(seconds: ReplicationStream.silenceLimit))
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }
}
