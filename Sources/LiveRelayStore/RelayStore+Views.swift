import Foundation
import LiveRelayCore
import PostgresNIO

/// The read-only views of `sql/030_views.sql`, queried PostgREST-style: `limit`, `offset`, `order=col.asc|desc` and
/// `col=op.value` filters (`eq`, `neq`, `gt`, `gte`, `lt`, `lte`). Columns are checked against the view's catalog
/// entry; values are bind parameters.
extension RelayStore {
    /// Public name → SQL view.
    public static let views = [
        "devices": "liverelay_devices", "activities": "liverelay_activities",
        "recent_deliveries": "liverelay_recent_deliveries", "delivery_stats": "liverelay_delivery_stats",
        "queue_depth": "liverelay_queue_depth", "webhooks": "liverelay_webhooks",
    ]
    static let viewOperators = ["eq": "=", "neq": "<>", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="]

    /// The rows of a view as a JSON array (text), for the parameters of a query string.
    public func readView(_ name: String, parameters: [(key: String, value: String)]) async throws -> String {
        guard let view = Self.views[name] else {
            let known = Self.views.keys.sorted().joined(separator: ", ")
            throw StoreError.notFound("no view \(name.excerpt); views: \(known)")
        }
        let columns = try await columnTypes(of: view)
        var limit = 100, offset = 0
        var order: String?
        var filters: [(column: String, op: String, type: String, value: String)] = []
        for (key, value) in parameters {
            switch key {
            case "limit":
                guard let number = Int(value), (1...1000).contains(number) else {
                    throw StoreError.invalidArgument("limit must be a whole number from 1 to 1000")
                }
                limit = number
            case "offset":
                guard let number = Int(value), number >= 0 else {
                    throw StoreError.invalidArgument("offset must be a whole number ≥ 0")
                }
                offset = number
            case "order" where value.isEmpty:
                continue
            case "order":
                let parts = value.split(separator: ".").map(String.init)
                guard let column = parts.first, columns[column] != nil, parts.count <= 2,
                      parts.count == 1 || ["asc", "desc"].contains(parts[1]) else {
                    throw StoreError.invalidArgument(
                        "order must be <column>.asc or <column>.desc with a column of the view")
                }
                order = "\"\(column)\" \(parts.count == 2 ? parts[1].uppercased() : "ASC")"
            default:
                guard let type = columns[key] else {
                    let known = columns.keys.sorted().joined(separator: ", ")
                    throw StoreError.invalidArgument("\(key.excerpt) is not a column of this view (columns: \(known))")
                }
                guard let dot = value.firstIndex(of: "."), let op = Self.viewOperators[String(value[..<dot])] else {
                    throw StoreError.invalidArgument("\(key) must be op.value with op one of eq, neq, gt, gte, lt, lte")
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
        // A filter value that does not fit its column is refused by the database (StoreError.refused).
        return try await values(sql, as: String.self).first ?? "[]"
    }

    private func columnTypes(of view: String) async throws -> [String: String] {
        let rows = try await withConnection { [logger] connection in
            var rows: [(String, String)] = []
            for try await row in try await connection.query("""
                SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute
                WHERE attrelid = \(view)::regclass AND attnum > 0 AND NOT attisdropped
                """, logger: logger).decode((String, String).self) { rows.append(row) }
            return rows
        }
        return Dictionary(rows, uniquingKeysWith: { first, _ in first })
    }
}
