import Foundation

/// A real PostgreSQL 15 for tests (docs/CLEARING.md §3.6): one cluster per test process, started on first use by
/// scripts/lib.sh's `pg_start` in a temporary folder, and a fresh database for each test. It only runs
/// processes and links no libpq. The cluster is stopped by its pid when the process exits, and by a watcher
/// process (`pg_watch`) if the test process dies without exiting.
public enum TestPostgres {
    /// The running cluster: its folder (which holds the Unix socket) and loopback port.
    public struct Cluster: Sendable {
        /// The cluster's folder; its Unix socket is in it.
        public let directory: String
        /// The loopback TCP port it also listens on.
        public let port: Int
    }

    /// The process's cluster, started on first use.
    public static func cluster() throws -> Cluster {
        try lock.withLock {
            if let started = state.cluster { return started }
            let started = try start()
            state.cluster = started
            return started
        }
    }

    /// A database of the test cluster.
    public struct Database: Sendable {
        /// Its name.
        public let name: String
        /// Its libpq connection string, through the cluster's Unix socket.
        public let connectionString: String
        /// The same database as a `postgresql://` URL over loopback TCP, for processes given `--db URL`.
        public let url: String
    }

    /// A new, empty database on the process's cluster (createdb, tens of milliseconds).
    public static func freshDatabase() throws -> Database {
        let cluster = try cluster()
        let name = "test_\(getpid())_\(lock.withLock { state.counter += 1; return state.counter })"
        let result = try Run.program(
            "/usr/lib/postgresql/15/bin/createdb",
            ["-h", cluster.directory, "-p", "\(cluster.port)", "-U", "clearing", name])
        guard result.status == 0 else { throw Failure("createdb \(name) failed: \(result.stderr)") }
        return Database(
            name: name, connectionString: "host=\(cluster.directory) port=\(cluster.port) user=clearing dbname=\(name)",
            url: "postgresql://clearing@127.0.0.1:\(cluster.port)/\(name)")
    }

    /// A fixture failure.
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
        /// A failure with its sentence.
        public init(_ description: String) { self.description = description }
    }

    private final class State: @unchecked Sendable {
        var cluster: Cluster?
        var counter = 0
    }
    private static let state = State()
    private static let lock = NSLock()

    /// The folder of the running cluster, for the exit handler (a C function pointer cannot capture).
    nonisolated(unsafe) private static var stopDirectory: String?

    private static func start() throws -> Cluster {
        let library = Run.projectRoot + "/scripts/lib.sh"
        // A short folder under /tmp: a Unix socket's path may not exceed 107 bytes.
        let directory = "/tmp/secure-pg-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        let started = try Run.program("/bin/bash", ["-c", #"source "$1"; pg_start "$2""#, "_", library, directory])
        guard started.status == 0, let port = Int(started.output.trimmingCharacters(in: .whitespacesAndNewlines))
        else {
            try? FileManager.default.removeItem(atPath: directory)
            throw Failure("pg_start failed (\(started.status)): \(started.stderr)")
        }
        // The watcher outlives a test process that crashes; a normal exit stops the cluster at once.
        let watcher = Process()
        watcher.executableURL = URL(fileURLWithPath: "/bin/bash")
        watcher.arguments = [
            "-c", #"source "$1"; pg_watch "$2" "$3""#, "_", library, "\(getpid())", directory,
        ]
        watcher.standardOutput = FileHandle.nullDevice
        watcher.standardError = FileHandle.nullDevice
        try watcher.run()
        stopDirectory = directory
        atexit {
            guard let directory = TestPostgres.stopDirectory else { return }
            TestPostgres.stop(directory)
        }
        return Cluster(directory: directory, port: port)
    }

    /// Stops the cluster by the pid in postmaster.pid (SIGINT, then SIGQUIT after 10 s) and removes its folder,
    /// without starting a process (it runs at exit).
    static func stop(_ directory: String) {
        if let text = try? String(contentsOfFile: directory + "/data/postmaster.pid", encoding: .utf8),
            let line = text.split(separator: "\n").first, let pid = pid_t(line), pid > 0
        {
            kill(pid, SIGINT)
            for tick in 0..<150 {
                if kill(pid, 0) != 0 { break }
                if tick == 100 { kill(pid, SIGQUIT) }
                usleep(100_000)
            }
        }
        try? FileManager.default.removeItem(atPath: directory)
    }
}
