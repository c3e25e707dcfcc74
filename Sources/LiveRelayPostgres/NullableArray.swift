import NIOCore
import PostgresNIO

/// An array parameter whose elements may be NULL, in PostgreSQL's binary array format (a NULL element is a length
/// of -1). PostgresNIO encodes arrays of present values only; without this, the record statements would be fed
/// "" or -1 for "none" and each SQL function would have to know which value stood for NULL in which column.
struct NullableArray<Element: PostgresArrayEncodable & PostgresNonThrowingEncodable>: PostgresDynamicTypeEncodable {
    var elements: [Element?]

    init(_ elements: [Element?]) {
        self.elements = elements
    }

    var psqlType: PostgresDataType { Element.psqlArrayType }
    var psqlFormat: PostgresFormat { .binary }

    func encode<JSONEncoder: PostgresJSONEncoder>(into buffer: inout ByteBuffer,
                                                  context: PostgresEncodingContext<JSONEncoder>) {
        // Header: dimensions (0 for an empty array), whether any element is NULL, the element type.
        buffer.writeInteger(elements.isEmpty ? 0 : 1, as: Int32.self)
        buffer.writeInteger(elements.contains { $0 == nil } ? 1 : 0, as: Int32.self)
        buffer.writeInteger(Element.psqlType.rawValue)
        guard !elements.isEmpty else { return }
        // The one dimension: its length and its lower bound.
        buffer.writeInteger(Int32(elements.count))
        buffer.writeInteger(1, as: Int32.self)
        for element in elements {
            guard let element else {
                buffer.writeInteger(-1, as: Int32.self)
                continue
            }
            let lengthIndex = buffer.writerIndex
            buffer.writeInteger(0, as: Int32.self)
            let start = buffer.writerIndex
            element.encode(into: &buffer, context: context)
            buffer.setInteger(Int32(buffer.writerIndex - start), at: lengthIndex)
        }
    }
}
