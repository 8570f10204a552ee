import Foundation
import SecureCrypto

/// The codes of `SchemaError`.
public enum SchemaErrorCode: CaseNameCode, FailureCode {
    /// The database was migrated by a newer `secure-clearing` than this one: this one must not touch it.
    case databaseNewer
    /// The database is not at this binary's schema version: run `secure-clearing migrate` first.
    case databaseBehind

    /// Both are a database that does not fit this binary.
    public var kind: FailureKind { .integrity }
}

/// The database's schema does not fit this binary.
public typealias SchemaError = CodedFailure<SchemaErrorCode>

/// The clearing's schema (docs/CLEARING.md §3.2) and its migrator. Migrations are numbered from 1, each applied
/// in its own transaction under one advisory lock, so two processes migrating at once apply each exactly once;
/// `schema_migrations` records what was applied.
public enum ClearingSchema {
    /// Every migration this binary knows, in order; the version is the position from 1.
    static let migrations: [String] = [migration0001, migration0002]

    /// The schema version this binary writes and serves.
    public static var version: Int { migrations.count }

    /// The advisory lock every migration takes (`pg_advisory_xact_lock`): the bytes "secclmig" as a bigint,
    /// so that it collides with no wallet's sync lock by more than chance.
    public static let migrationLockKey: Int64 = 0x7365_6363_6c6d_6967

    /// Brings the database up to `version`, applying each missing migration in one transaction under the
    /// migration lock. Returns the versions this call applied (empty when the database was already current,
    /// or another process applied them first). Throws `databaseNewer` for a database this binary does not know.
    @discardableResult
    public static func migrate(_ connection: PostgresConnection) throws -> [Int] {
        var applied: [Int] = []
        for (index, sql) in migrations.enumerated() {
            let target = index + 1
            let didApply = try connection.transaction {
                try connection.advisoryTransactionLock(migrationLockKey)
                try connection.execute(
                    script: """
                        CREATE TABLE IF NOT EXISTS schema_migrations (
                            version integer PRIMARY KEY,
                            applied_at timestamptz NOT NULL DEFAULT now()
                        )
                        """)
                let current = try currentVersion(connection)
                guard current <= version else { throw newer(current) }
                guard current < target else { return false }
                precondition(current == target - 1, "schema_migrations has a gap below \(target)")
                try connection.execute(trustedScript: sql)
                try connection.query(
                    "INSERT INTO schema_migrations (version) VALUES ($1)", [.int4(Int32(target))])
                return true
            }
            if didApply { applied.append(target) }
        }
        // A database already at this version still gets checked: one a newer binary moved on is refused.
        let current = try currentVersion(connection)
        guard current <= version else { throw newer(current) }
        return applied
    }

    /// The database's schema version: the highest applied migration, 0 for a database never migrated.
    public static func currentVersion(_ connection: PostgresConnection) throws -> Int {
        let exists = try connection.query("SELECT to_regclass('schema_migrations') IS NOT NULL AS present")
        guard let row = exists.rows.first, try row.bool("present") else { return 0 }
        let result = try connection.query("SELECT coalesce(max(version), 0)::int4 AS version FROM schema_migrations")
        guard let version = result.rows.first else { return 0 }
        return Int(try version.int32("version"))
    }

    /// Throws unless the database is exactly at this binary's version (`serve` runs it before it listens).
    public static func requireCurrent(_ connection: PostgresConnection) throws {
        let current = try currentVersion(connection)
        if current > version { throw newer(current) }
        guard current == version else {
            throw SchemaError(
                .databaseBehind,
                "the database is at schema version \(current), this secure-clearing needs \(version): "
                    + "run `secure-clearing migrate` first")
        }
    }

    private static func newer(_ current: Int) -> SchemaError {
        SchemaError(
            .databaseNewer,
            "the database is at schema version \(current), newer than this secure-clearing knows (\(version)); "
                + "use a newer secure-clearing")
    }
}
