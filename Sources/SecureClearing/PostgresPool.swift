import Foundation

/// A bounded set of connections shared by the server's threads: each `withConnection` borrows one for its
/// body (opening it on first use) and gives it back; a broken one is dropped and replaced on the next borrow.
public final class PostgresPool: @unchecked Sendable {
    private let connectionString: String
    private let condition = NSCondition()
    private var idle: [PostgresConnection] = []
    private var open = 0
    /// The most connections open at once.
    public let size: Int
    /// How long a borrower waits for a connection before it gives up with `connectionFailed` (the handler
    /// answers 503 and the client retries).
    public let waitSeconds: Double

    /// The most connections a pool may hold: PostgreSQL's default `max_connections` is 100, shared by every
    /// `serve` process and the tools.
    public static let sizeMax = 64

    /// A pool of at most `size` connections to `connectionString`; none is opened until one is borrowed.
    public init(_ connectionString: String, size: Int, waitSeconds: Double = 5) {
        precondition(size >= 1 && size <= Self.sizeMax, "pool size out of range")
        self.connectionString = connectionString
        self.size = size
        self.waitSeconds = waitSeconds
    }

    /// Runs `body` with a connection of its own. The connection must be left outside any transaction
    /// (`PostgresConnection.transaction` does so).
    public func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let connection = try borrow()
        var healthy = false
        defer { giveBack(connection, healthy: healthy) }
        let value = try body(connection)
        healthy = connection.isHealthy && !connection.inTransaction
        return value
    }

    private func borrow() throws -> PostgresConnection {
        let deadline = Date().addingTimeInterval(waitSeconds)
        condition.lock()
        while idle.isEmpty && open >= size {
            guard condition.wait(until: deadline) else {
                condition.unlock()
                throw PostgresError(
                    .connectionFailed, "all \(size) database connections stayed busy for \(waitSeconds) s")
            }
        }
        if let connection = idle.popLast() {
            condition.unlock()
            return connection
        }
        open += 1
        condition.unlock()
        do {
            return try PostgresConnection(connectionString)
        } catch {
            condition.withLock {
                open -= 1
                condition.signal()
            }
            throw error
        }
    }

    private func giveBack(_ connection: PostgresConnection, healthy: Bool) {
        condition.withLock {
            if healthy && connection.isHealthy && !connection.inTransaction {
                idle.append(connection)
            } else {
                open -= 1
            }
            condition.signal()
        }
    }
}
