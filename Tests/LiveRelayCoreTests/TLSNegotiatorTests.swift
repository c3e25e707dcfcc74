import NIOCore
import NIOEmbedded
import NIOSSL
import Testing
@testable import LiveRelayWAL

/// The SSLRequest step of the replication connection, byte by byte: what it sends, and what each answer leads to.
@Suite("TLS negotiation of the replication connection")
struct TLSNegotiatorTests {
    /// A connected channel with the negotiator, and the promise it completes.
    static func negotiating(required: Bool) throws -> (EmbeddedChannel, EventLoopFuture<Bool>) {
        let channel = EmbeddedChannel()
        let promise = channel.eventLoop.makePromise(of: Bool.self)
        let context = try NIOSSLContext(configuration: .makeClientConfiguration())
        let tls = ReplicationTLS(context: context, serverName: "db.example", required: required)
        try channel.pipeline.syncOperations.addHandler(TLSNegotiator(tls, promise: promise))
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 5432)).wait()
        return (channel, promise.futureResult)
    }

    static func answer(_ channel: EmbeddedChannel, _ bytes: [UInt8]) throws {
        try channel.writeInbound(channel.allocator.buffer(bytes: bytes))
    }

    @Test("once connected it sends SSLRequest: length 8, code 1234/5679, and nothing else")
    func request() throws {
        let (channel, _) = try Self.negotiating(required: true)
        let sent = try channel.readOutbound(as: ByteBuffer.self)
        #expect(sent.map { Array($0.readableBytesView) } == [0, 0, 0, 8, 0x04, 0xD2, 0x16, 0x2F])
        #expect(try channel.readOutbound(as: ByteBuffer.self) == nil)
    }

    @Test("'S': NIOSSL's handler takes the front of the pipeline and starts the handshake; the negotiator leaves")
    func accepted() async throws {
        let (channel, negotiated) = try Self.negotiating(required: true)
        _ = try channel.readOutbound(as: ByteBuffer.self)
        try Self.answer(channel, [UInt8(ascii: "S")])
        #expect(try await negotiated.get() == true)
        #expect(throws: (any Error).self) { try channel.pipeline.syncOperations.handler(type: TLSNegotiator.self) }
        _ = try channel.pipeline.syncOperations.handler(type: NIOSSLClientHandler.self)
        // The ClientHello: a TLS handshake record (content type 22).
        let hello = try channel.readOutbound(as: ByteBuffer.self)
        #expect(hello?.readableBytesView.first == 22)
    }

    @Test("'N' under prefer: the connection goes on in clear")
    func declinedWhenPreferred() async throws {
        let (channel, negotiated) = try Self.negotiating(required: false)
        try Self.answer(channel, [UInt8(ascii: "N")])
        #expect(try await negotiated.get() == false)
        #expect(channel.isActive)
    }

    @Test("'N' under require: a permanent refusal, and the connection is closed")
    func declinedWhenRequired() async throws {
        let (channel, negotiated) = try Self.negotiating(required: true)
        try Self.answer(channel, [UInt8(ascii: "N")])
        await #expect(throws: ReplicationFailure.tlsRefused) { try await negotiated.get() }
        #expect(ReplicationFailure.tlsRefused.isPermanent)
        #expect(!channel.isActive)
    }

    @Test("bytes after 'S' came before the handshake, in clear: refused, never handed to TLS")
    func bytesInjectedAfterAnswer() async throws {
        let (channel, negotiated) = try Self.negotiating(required: false)
        try Self.answer(channel, [UInt8(ascii: "S"), UInt8(ascii: "R"), 0, 0])
        await #expect(throws: ReplicationFailure.brokenStream) { try await negotiated.get() }
        #expect(throws: (any Error).self) {
            try channel.pipeline.syncOperations.handler(type: NIOSSLClientHandler.self)
        }
        #expect(!channel.isActive)
    }

    @Test("an answer that is neither 'S' nor 'N' (an error from a server too old for SSLRequest) fails the connection")
    func unexpectedAnswer() async throws {
        let (channel, negotiated) = try Self.negotiating(required: false)
        try Self.answer(channel, [UInt8(ascii: "E")])
        await #expect(throws: ReplicationFailure.unexpectedMessage(UInt8(ascii: "E"), while: "asking for TLS")) {
            try await negotiated.get()
        }
    }

    @Test("the connection closed before any answer: the wait ends with that")
    func closedBeforeAnswer() async throws {
        let (channel, negotiated) = try Self.negotiating(required: true)
        try await channel.close()
        await #expect(throws: ReplicationFailure.closed(while: "asking for TLS")) { try await negotiated.get() }
    }
}
