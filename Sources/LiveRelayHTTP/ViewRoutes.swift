import Foundation
import Hummingbird
import LiveRelayCore
import NIOCore
import PostgresNIO

/// `GET /v1/views/{name}`: the dashboard views of `sql/030_views.sql`, with PostgREST-style `limit`, `offset`,
/// `order=col.asc|desc` and `col=op.value` filters (`eq`, `neq`, `gt`, `gte`, `lt`, `lte`). Columns are checked against
/// the view; values are bind parameters. Admin only.
struct ViewRoutes: Sendable {
    let auth: Authenticator
    let database: RouteDatabase

    /// Public name → SQL view.
    static let views = [
        "devices": "liverelay_devices", "activities": "liverelay_activities", "recent_deliveries": "liverelay_recent_deliveries",
        "delivery_stats": "liverelay_delivery_stats", "queue_depth": "liverelay_queue_depth",
    ]
    static let operators = ["eq": "=", "neq": "<>", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="]

    func register(on router: Router<BasicRequestContext>) {
        router.get("v1/views") { request, _ in
            try auth.requireAdmin(request)
            return jsonResponse(.ok, ["ok": .bool(true), "views": .array(Self.views.keys.sorted().map { .string($0) })])
        }
        router.get("v1/views/:name") { request, context in
            try auth.requireAdmin(request)
            let name = context.parameters.get("name") ?? ""
            guard let view = Self.views[name] else {
                throw APIError.notFound("no view \(name); views: \(Self.views.keys.sorted().joined(separator: ", "))")
            }
            return try await query(view: view, parameters: request.uri.queryParameters)
        }
    }

    func query(view: String, parameters: Parameters) async throws -> Response {
        let columns = try await columnTypes(of: view)
        var limit = 100
        var offset = 0
        var order: String?
        var filters: [(column: String, op: String, type: String, value: String)] = []
        for (key, value) in parameters {
            let key = String(key), value = String(value)
            switch key {
            case "limit":
                guard let number = Int(value), (1...1000).contains(number) else { throw APIError.badRequest("limit must be 1...1000") }
                limit = number
            case "offset":
                guard let number = Int(value), number >= 0 else { throw APIError.badRequest("offset must be a whole number ≥ 0") }
                offset = number
            case "order" where value.isEmpty:
                continue
            case "order":
                let parts = value.split(separator: ".").map(String.init)
                guard let column = parts.first, columns[column] != nil, parts.count <= 2,
                      parts.count == 1 || ["asc", "desc"].contains(parts[1]) else {
                    throw APIError.badRequest("order must be <column>.asc or <column>.desc with a column of the view")
                }
                order = "\"\(column)\" \(parts.count == 2 ? parts[1].uppercased() : "ASC")"
            default:
                guard let type = columns[key] else {
                    throw APIError.badRequest("\(key) is not a column of this view (columns: \(columns.keys.sorted().joined(separator: ", ")))")
                }
                guard let dot = value.firstIndex(of: "."), let op = Self.operators[String(value[..<dot])] else {
                    throw APIError.badRequest("\(key) must be op.value with op one of eq, neq, gt, gte, lt, lte")
                }
                filters.append((key, op, type, String(value[value.index(after: dot)...])))
            }
        }
        // Identifiers and types come from the catalog, never from the request; values are bound.
        var sql = PostgresQuery(unsafeSQL: "SELECT coalesce(json_agg(v), '[]')::text FROM (SELECT * FROM \(view)")
        for (index, filter) in filters.enumerated() {
            sql.sql += index == 0 ? " WHERE " : " AND "
            sql.sql += "\"\(filter.column)\" \(filter.op) $\(index + 1)::\(filter.type)"
            sql.binds.append(filter.value)
        }
        if let order { sql.sql += " ORDER BY \(order)" }
        sql.sql += " LIMIT \(limit) OFFSET \(offset)) v"
        let query = sql
        // A filter value that does not fit its column is refused by the database: 400 (JSONErrorMiddleware).
        let text = try await database.rows(query, as: String.self).first ?? "[]"
        return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    private func columnTypes(of view: String) async throws -> [String: String] {
        var columns: [String: String] = [:]
        for (name, type) in try await database.withConnection({ connection in
            var rows: [(String, String)] = []
            for try await row in try await connection.query("""
                SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute
                WHERE attrelid = \(view)::regclass AND attnum > 0 AND NOT attisdropped
                """, logger: database.logger).decode((String, String).self) { rows.append(row) }
            return rows
        }) {
            columns[name] = type
        }
        return columns
    }
}
