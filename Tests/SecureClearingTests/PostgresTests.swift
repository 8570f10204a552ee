import Foundation
import SecureTestSupport
import Testing

@testable import SecureClearing

/// The libpq wrapper and the migrator against a real PostgreSQL 15 (TestPostgres: one cluster per test process,
/// a fresh database per test).
@Suite("PostgreSQL wrapper and migrations")
struct PostgresTests {
    static func connect() throws -> PostgresConnection {
        try PostgresConnection(try TestPostgres.freshDatabase().connectionString)
    }

    /// Every type goes in as a binary parameter and comes back as a binary result unchanged, extremes and NULL
    /// included; and the server reads each parameter as the value it is (compared with SQL literals), so the
    /// encoding is PostgreSQL's and not merely symmetric.
    @Test func everyTypeRoundTrips() throws {
        let database = try Self.connect()
        try database.execute(script: "CREATE TABLE t (b bytea, i8 bigint, i4 integer, f boolean, s text)")
        let rows: [[PostgresValue]] = [
            [.bytea([0, 1, 0x7f, 0x80, 0xff]), .int8(.min), .int4(.min), .bool(true), .text("Grüße, 😀 'quoted' $1")],
            [.bytea([]), .int8(.max), .int4(.max), .bool(false), .text("")],
            [.null, .null, .null, .null, .null],
        ]
        for row in rows {
            let inserted = try database.query("INSERT INTO t VALUES ($1, $2, $3, $4, $5)", row)
            #expect(inserted.affectedRows == 1)
        }
        let back = try database.query("SELECT b, i8, i4, f, s FROM t")
        #expect(back.columns == ["b", "i8", "i4", "f", "s"])
        #expect(Set(back.rows.map(\.values)) == Set(rows))

        let literal = try database.query(
            """
            SELECT $1 = '\\x00017f80ff'::bytea AS b, $2 = -9223372036854775808 AS i8, $3 = -2147483648 AS i4,
                   $4 = true AS f, $5 = 'Grüße, 😀 ''quoted'' $1' AS s
            """, rows[0])
        #expect(literal.rows[0].values == [.bool(true), .bool(true), .bool(true), .bool(true), .bool(true)])

        let typed = try database.query("SELECT 'x'::bytea AS b, 42::int8 AS n, -7::int4 AS m, 3::int2 AS small")
        #expect(try typed.rows[0].bytes("b") == [0x78])
        #expect(try typed.rows[0].int64("n") == 42)
        #expect(try typed.rows[0].int32("m") == -7)
        #expect(try typed.rows[0].int32("small") == 3)
        #expect(throws: PostgresError(.unexpectedResult, "")) { try typed.rows[0].bool("n") }

        try database.prepare(
            "pick", "SELECT i8 FROM t WHERE b = $1 AND i4 = $2 AND f = $3 AND s = $4",
            parameterTypes: [.bytea, .int4, .bool, .text])
        #expect(database.isPrepared("pick") && !database.isPrepared("other"))
        let picked = try database.execute(prepared: "pick", [rows[1][0], rows[1][2], rows[1][3], rows[1][4]])
        #expect(picked.rows.map(\.values) == [[.int8(.max)]])
    }

    /// A constraint's refusal carries its SQLSTATE: the schema's money CHECK (23514) and a primary key (23505).
    @Test func constraintViolationsCarrySQLState() throws {
        let database = try Self.connect()
        try ClearingSchema.migrate(database)
        let insert =
            "INSERT INTO mints (issuer, voucher_id, recipient, currency, units, encoded) VALUES ($1, $2, $3, $4, $5, '')"
        let row: [PostgresValue] = [.bytea([1]), .bytea([2]), .bytea([3]), .text("EUR"), .int8(500)]
        try database.query(insert, row)
        do {
            try database.query(insert, row)
            Issue.record("a duplicate key was accepted")
        } catch let error as PostgresError {
            #expect(error.code == .statementFailed)
            #expect(error.sqlState == PostgresError.uniqueViolation, "\(error)")
        }
        do {
            try database.query(insert, [.bytea([1]), .bytea([9]), .bytea([3]), .text("EUR"), .int8(-1)])
            Issue.record("negative money was accepted")
        } catch let error as PostgresError {
            #expect(error.sqlState == PostgresError.checkViolation, "\(error)")
            #expect(!error.isRetryable)
        }
        // A failed statement inside a transaction rolls the whole transaction back.
        #expect(throws: PostgresError.self) {
            try database.transaction {
                try database.query(insert, [.bytea([1]), .bytea([7]), .bytea([3]), .text("EUR"), .int8(1)])
                try database.query(insert, row)
            }
        }
        #expect(!database.inTransaction)
        let count = try database.query("SELECT count(*)::int8 AS n FROM mints")
        #expect(try count.rows[0].int64("n") == 1)
    }

    /// 40001 and 40P01 are retryable: the transaction runs again up to its attempts, and the last one's error is
    /// thrown. The server raises the real SQLSTATE.
    @Test func serializationFailuresAreRetried() throws {
        let database = try Self.connect()
        try database.execute(script: "CREATE TABLE runs (n integer)")
        var attempts = 0
        let value = try database.transaction(attempts: 3) {
            attempts += 1
            try database.query("INSERT INTO runs VALUES ($1)", [.int4(Int32(attempts))])
            if attempts < 3 {
                try database.execute(script: "DO $$ BEGIN RAISE EXCEPTION 'conflict' USING ERRCODE = '40001'; END $$")
            }
            return attempts
        }
        #expect(value == 3)
        let kept = try database.query("SELECT n FROM runs")
        #expect(kept.rows.map(\.values) == [[.int4(3)]], "only the last attempt's insert is kept")
        do {
            try database.transaction {
                try database.execute(script: "DO $$ BEGIN RAISE EXCEPTION 'victim' USING ERRCODE = '40P01'; END $$")
            }
            Issue.record("a deadlock was not thrown")
        } catch let error as PostgresError {
            #expect(error.code == .retryableConflict && error.isRetryable)
            #expect(error.sqlState == PostgresError.deadlockDetected)
        }
    }

    /// pg_try_advisory_xact_lock from two connections: the second is refused while the first's transaction
    /// holds the lock, never waits, and gets it once that transaction ends.
    @Test func advisoryTryLockFromTwoConnections() throws {
        let database = try TestPostgres.freshDatabase()
        let first = try PostgresConnection(database.connectionString)
        let second = try PostgresConnection(database.connectionString)
        let (firstTook, secondTook, otherKey) = try first.transaction {
            let firstTook = try first.tryAdvisoryTransactionLock(0x1234)
            let (secondTook, otherKey) = try second.transaction {
                (try second.tryAdvisoryTransactionLock(0x1234), try second.tryAdvisoryTransactionLock(0x1235))
            }
            return (firstTook, secondTook, otherKey)
        }
        #expect(firstTook)
        #expect(!secondTook, "the second connection is refused while the first's transaction holds the lock")
        #expect(otherKey, "another key is free")
        let afterwards = try second.transaction { try second.tryAdvisoryTransactionLock(0x1234) }
        #expect(afterwards, "the lock ends with the first transaction")
    }

    /// Migrations 1 and 2 from an empty database makes every table of docs/CLEARING.md §3.2; running it again applies
    /// nothing; a database a newer binary migrated is refused by migrate and by serve's check.
    @Test func migrationsFromEmptyIdempotentAndNewerRefused() throws {
        let database = try Self.connect()
        #expect(try ClearingSchema.currentVersion(database) == 0)
        #expect(throws: SchemaError(.databaseBehind, "")) { try ClearingSchema.requireCurrent(database) }
        #expect(try ClearingSchema.migrate(database) == [1, 2])
        #expect(try ClearingSchema.currentVersion(database) == ClearingSchema.version)
        try ClearingSchema.requireCurrent(database)
        let tables = try database.query(
            "SELECT table_name::text AS name FROM information_schema.tables WHERE table_schema = 'public'")
        let names = Set(try tables.rows.map { try $0.text("name") })
        let expected: Set<String> = [
            "schema_migrations", "wallets", "entries", "statements", "payments_out", "debits", "credits", "matches",
            "reversals", "mints", "deposits", "held_checkpoints", "evidence", "claims", "sync_sessions", "batches",
            "cosignatures", "list_increments", "listings", "quotas",
            // Migration 2 (PostgresClearingStore).
            "confirmations", "inconsistencies", "settlements", "wallet_logs", "admissions", "sync_states",
            "sent_transfers", "sync_chunks",
        ]
        #expect(names == expected)
        // Every money column is bigint with a CHECK that refuses a negative amount.
        let money = try database.query(
            "SELECT table_name::text AS t, data_type::text AS type FROM information_schema.columns WHERE column_name = 'units'"
        )
        #expect(money.rows.count == 6, "payments_out, debits, credits, reversals, mints, deposits")
        #expect(try money.rows.allSatisfy { try $0.text("type") == "bigint" })

        #expect(try ClearingSchema.migrate(database) == [])
        try database.query(
            "INSERT INTO schema_migrations (version) VALUES ($1)", [.int4(Int32(ClearingSchema.version + 1))])
        #expect(throws: SchemaError(.databaseNewer, "")) { try ClearingSchema.migrate(database) }
        #expect(throws: SchemaError(.databaseNewer, "")) { try ClearingSchema.requireCurrent(database) }
    }

    /// Two `secure-clearing migrate` processes on one empty database at once: both succeed, exactly one applies
    /// the migrations (the other waits on the migration lock, then finds it applied).
    @Test func twoProcessesMigrateAtOnce() throws {
        let database = try TestPostgres.freshDatabase()
        final class Results: @unchecked Sendable {
            let lock = NSLock()
            var values: [ProcessResult?] = [nil, nil]
        }
        let results = Results()
        DispatchQueue.concurrentPerform(iterations: 2) { index in
            let result = try? Run.program(ClearingProcess.binary, ["migrate", "--db", database.url])
            results.lock.withLock { results.values[index] = result }
        }
        let outputs = results.values.compactMap { $0 }
        #expect(outputs.count == 2)
        #expect(outputs.allSatisfy { $0.status == 0 }, "\(outputs.map(\.stderr))")
        #expect(
            outputs.filter { $0.output.contains("applied migrations 1, 2;") }.count == 1, "\(outputs.map(\.output))")
        #expect(outputs.filter { $0.output.contains("nothing to apply") }.count == 1, "\(outputs.map(\.output))")
        let connection = try PostgresConnection(database.connectionString)
        #expect(try ClearingSchema.currentVersion(connection) == ClearingSchema.version)
    }
}
