import Foundation

/// The health route alone over PostgreSQL (`GET /v1/health`), which `serve --db` runs until the PostgreSQL store
/// of `ClearingService` is merged (docs/CLEARING.md §3.3). Every error is the one JSON shape of `HTTPResponse.error`.
public final class ClearingHealthService: Sendable {
    private let pool: PostgresPool

    /// The format of `GET /v1/health`'s body, docs/schemas/clearing-health.v1.schema.json.
    public static let healthFormat = "secure-clearing-health-v1"

    /// Routes served from the database behind `pool`.
    public init(pool: PostgresPool) {
        self.pool = pool
    }

    /// The body limit of each route, for `HTTPServerConfiguration.bodyLimit`: 0 for every route so far (none
    /// takes a body), so any body is answered 413 `too-large` unread.
    public static func bodyLimit(method: String, path: String) -> Int { 0 }

    /// Answers one request.
    public func handle(_ request: HTTPRequest) -> HTTPResponse {
        switch (request.method, request.path) {
        case ("GET", "/v1/health"), ("HEAD", "/v1/health"): return health()
        case (_, "/v1/health"):
            return .error(status: 405, code: "method-not-allowed", message: "\(request.path) takes GET only")
        default:
            return .error(
                status: 404, code: "not-found", message: "no such resource: \(request.method) \(request.path)")
        }
    }

    /// The schema version the database is at (read each time, so that the answer also says the database is
    /// reachable) and this process's id, so that an operator behind a load balancer sees which process answered.
    private func health() -> HTTPResponse {
        do {
            let version = try pool.withConnection { try ClearingSchema.currentVersion($0) }
            return .json(
                status: 200,
                [
                    "format": Self.healthFormat, "schemaVersion": version,
                    "pid": Int(ProcessInfo.processInfo.processIdentifier),
                ])
        } catch {
            return .error(status: 503, code: "unavailable", message: "the database is unavailable; retry")
        }
    }
}
