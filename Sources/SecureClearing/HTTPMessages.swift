import Foundation

/// A whole HTTP request, its body already buffered (never more than its route's limit).
public struct HTTPRequest: Sendable {
    /// The method, e.g. "GET".
    public let method: String
    /// The path without the query, percent-decoded by libmicrohttpd, e.g. "/v1/health".
    public let path: String
    /// The query's arguments in order, decoded; an argument without `=` has the value "".
    public let query: [(name: String, value: String)]
    /// The request headers in order, as sent (names compared case-insensitively by `header`).
    public let headers: [(name: String, value: String)]
    /// The body.
    public let body: [UInt8]
    /// The client's address ("127.0.0.1", "::1"); a proxy's when the service is behind one.
    public let clientAddress: String

    /// A request, as the server hands it to a handler (and as tests build one).
    public init(
        method: String, path: String, query: [(name: String, value: String)] = [],
        headers: [(name: String, value: String)] = [], body: [UInt8] = [], clientAddress: String = ""
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.clientAddress = clientAddress
    }

    /// The first header of that name (case-insensitive), if any.
    public func header(_ name: String) -> String? {
        headers.first { $0.name.caseInsensitiveCompare(name) == .orderedSame }?.value
    }

    /// The first query argument of that name, if any.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }
}

/// A whole HTTP response.
public struct HTTPResponse: Sendable, Equatable {
    /// The status code, e.g. 200.
    public let status: Int
    /// The Content-Type header's value.
    public let contentType: String
    /// The body.
    public let body: [UInt8]

    /// A response with a status, a content type and a body.
    public init(status: Int, contentType: String, body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.body = body
    }

    /// A JSON document (docs/JSON.md: one object, sorted keys, no insignificant whitespace, one line).
    public static func json(status: Int, _ object: [String: Any]) -> HTTPResponse {
        let data =
            (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes]))
            ?? Data("{}".utf8)
        return HTTPResponse(status: status, contentType: "application/json", body: Array(data) + [0x0A])
    }

    /// The format of every error body, docs/schemas/clearing-error.v1.schema.json.
    public static let errorFormat = "secure-clearing-error-v1"

    /// An error in the clearing's one shape (docs/CLEARING.md §3.3):
    /// `{"error": {"code": …, "message": …}, "format": "secure-clearing-error-v1"}`.
    public static func error(status: Int, code: String, message: String) -> HTTPResponse {
        json(status: status, ["format": errorFormat, "error": ["code": code, "message": message]])
    }
}
