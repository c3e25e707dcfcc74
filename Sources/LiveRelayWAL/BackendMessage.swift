import NIOCore

/// A message from the PostgreSQL server (protocol 3.0): its type byte and its body.
struct BackendMessage: Sendable {
    var type: UInt8
    var body: ByteBuffer

    static let authentication = UInt8(ascii: "R")
    static let error = UInt8(ascii: "E")
    static let ready = UInt8(ascii: "Z")
    static let dataRow = UInt8(ascii: "D")
    static let copyBoth = UInt8(ascii: "W")
    static let copyData = UInt8(ascii: "d")
    static let copyDone = UInt8(ascii: "c")

    /// An ErrorResponse as a failure: its message and SQLSTATE.
    var refusal: ReplicationFailure {
        var body = body
        var message = "", code = ""
        while let field = body.readInteger(as: UInt8.self), field != 0 {
            let value = body.readNullTerminatedString() ?? ""
            if field == UInt8(ascii: "M") { message = value }
            if field == UInt8(ascii: "C") { code = value }
        }
        return .refused(message, code: code)
    }

    /// A DataRow's text columns.
    var columns: [String?] {
        var body = body
        guard let count = body.readInteger(as: Int16.self) else { return [] }
        return (0..<Int(count)).map { _ in
            guard let length = body.readInteger(as: Int32.self), length >= 0 else { return nil }
            return body.readString(length: Int(length))
        }
    }
}

/// Frames the server's byte stream into messages (a type byte, a length that counts itself, the body).
struct BackendMessageDecoder: ByteToMessageDecoder {
    typealias InboundOut = BackendMessage
    /// No message the relay reads comes near this; a larger length is a broken stream.
    static let largestMessage = 64 << 20

    mutating func decode(context: ChannelHandlerContext, buffer: inout ByteBuffer) throws -> DecodingState {
        guard let type = buffer.getInteger(at: buffer.readerIndex, as: UInt8.self),
              let length = buffer.getInteger(at: buffer.readerIndex + 1, as: Int32.self)
        else { return .needMoreData }
        guard length >= 4, Int(length) <= Self.largestMessage else { throw ReplicationFailure.brokenStream }
        guard buffer.readableBytes >= 1 + Int(length) else { return .needMoreData }
        buffer.moveReaderIndex(forwardBy: 5)
        let body = buffer.readSlice(length: Int(length) - 4)!
        context.fireChannelRead(wrapInboundOut(BackendMessage(type: type, body: body)))
        return .continue
    }
}

/// The messages the relay sends.
enum FrontendMessage {
    static func startup(user: String, database: String?, applicationName: String) -> ByteBuffer {
        var body = ByteBuffer()
        body.writeInteger(Int32(196_608))  // protocol 3.0
        var parameters = [("user", user), ("replication", "true"), ("application_name", applicationName)]
        if let database { parameters.append(("database", database)) }
        for (name, value) in parameters {
            body.writeNullTerminatedString(name)
            body.writeNullTerminatedString(value)
        }
        body.writeInteger(UInt8(0))
        var message = ByteBuffer()
        message.writeInteger(Int32(body.readableBytes + 4))
        message.writeBuffer(&body)
        return message
    }

    static func typed(_ type: Character, _ fill: (inout ByteBuffer) -> Void) -> ByteBuffer {
        var body = ByteBuffer()
        fill(&body)
        var message = ByteBuffer()
        message.writeInteger(type.asciiValue!)
        message.writeInteger(Int32(body.readableBytes + 4))
        message.writeBuffer(&body)
        return message
    }

    static func password(_ text: String) -> ByteBuffer { typed("p") { $0.writeNullTerminatedString(text) } }

    static func saslInitial(mechanism: String, _ data: String) -> ByteBuffer {
        typed("p") {
            $0.writeNullTerminatedString(mechanism)
            $0.writeInteger(Int32(data.utf8.count))
            $0.writeString(data)
        }
    }

    static func saslResponse(_ data: String) -> ByteBuffer { typed("p") { $0.writeString(data) } }

    static func query(_ text: String) -> ByteBuffer { typed("Q") { $0.writeNullTerminatedString(text) } }

    /// A standby status update: everything up to `position` received (written, flushed and applied: this client
    /// keeps nothing, and is never a synchronous standby; see WALWatcher).
    static func standbyStatus(position: LSN, microsecondsSince2000: Int64) -> ByteBuffer {
        typed("d") {
            $0.writeInteger(UInt8(ascii: "r"))
            for _ in 0..<3 { $0.writeInteger(position) }
            $0.writeInteger(microsecondsSince2000)
            $0.writeInteger(UInt8(0))
        }
    }

    static let terminate = typed("X") { _ in }
}
