// secure-clearing: the issuer's clearing service (docs/CLEARING.md §3).
//   secure-clearing migrate --db URL
//   secure-clearing serve --db URL --listen ADDR [--tls-key F --tls-cert F | --tls-terminated-by-proxy]
//       [--threads N] [--db-connections N]
// Exit codes: 0 success, 1 failure, 2 usage error.
import CommandLineSupport
import Foundation
import SecureClearing

let usage = """
    Usage:
      secure-clearing migrate --db URL
          Brings the database's schema to this binary's version (each migration once, under a lock).
      secure-clearing serve --db URL --listen HOST:PORT (--tls-key FILE --tls-cert FILE | --tls-terminated-by-proxy)
          [--threads N] [--db-connections N]
          Serves the clearing's HTTP API. TLS from PEM key and certificate files, or plain HTTP on loopback
          behind a TLS terminator. Refuses a database not at this binary's schema version.
          Prints "listening HOST:PORT" once it accepts connections; SIGINT or SIGTERM stops it.

    URL is a postgresql:// URL or a libpq connection string. Exit codes: 0 success, 1 failure, 2 usage.
    """

func migrate(_ words: [String]) throws {
    let arguments = try Arguments(words, options: ["db"], flags: [])
    _ = try arguments.positionals(0, "no arguments besides the options")
    let connection = try PostgresConnection(try arguments.required("db"))
    let applied = try ClearingSchema.migrate(connection)
    if applied.isEmpty {
        print("schema at version \(ClearingSchema.version); nothing to apply")
    } else {
        print(
            "applied migration\(applied.count == 1 ? "" : "s") \(applied.map(String.init).joined(separator: ", "));"
                + " schema at version \(ClearingSchema.version)")
    }
}

func serve(_ words: [String]) throws {
    let arguments = try Arguments(
        words, options: ["db", "listen", "tls-key", "tls-cert", "threads", "db-connections"],
        flags: ["tls-terminated-by-proxy"])
    _ = try arguments.positionals(0, "no arguments besides the options")
    let database = try arguments.required("db")
    let listen = try arguments.required("listen")
    var tls: (keyPEM: [UInt8], certificatePEM: [UInt8])?
    switch (arguments.value("tls-key"), arguments.value("tls-cert"), arguments.flag("tls-terminated-by-proxy")) {
    case (let key?, let certificate?, false):
        tls = (try readFile(key, what: "TLS key"), try readFile(certificate, what: "TLS certificate"))
    case (nil, nil, true):
        tls = nil
    default:
        throw UsageError("give either --tls-key and --tls-cert, or --tls-terminated-by-proxy")
    }
    let cores = ProcessInfo.processInfo.activeProcessorCount
    let threads = try arguments.integer("threads", default: cores, max: HTTPServerConfiguration.threadCountMax)
    let connections = try arguments.integer(
        "db-connections", default: min(threads * 2, PostgresPool.sizeMax), max: PostgresPool.sizeMax)

    try ClearingSchema.requireCurrent(try PostgresConnection(database))
    let service = ClearingService(pool: PostgresPool(database, size: connections))

    // SIGINT and SIGTERM are blocked before any thread starts, so every thread inherits the mask and only the
    // main thread's sigwait receives them.
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, SIGINT)
    sigaddset(&signals, SIGTERM)
    pthread_sigmask(SIG_BLOCK, &signals, nil)

    var configuration = HTTPServerConfiguration(listen: listen, tls: tls) { method, path in
        ClearingService.bodyLimit(method: method, path: path)
    }
    configuration.threadCount = threads
    let server = try HTTPServer(configuration) { service.handle($0) }
    let host = listen[..<(listen.lastIndex(of: ":") ?? listen.endIndex)]
    print("listening \(host):\(server.port)")
    fflush(nil)
    var received: Int32 = 0
    sigwait(&signals, &received)
    server.stop()
    printError("secure-clearing: stopped by signal \(received)")
}

let words = Array(CommandLine.arguments.dropFirst())
do {
    switch words.first {
    case "migrate": try migrate(Array(words.dropFirst()))
    case "serve": try serve(Array(words.dropFirst()))
    case "--help", "-h", "help":
        print(usage)
    case nil:
        printError(usage)
        exit(2)
    case let other?:
        throw UsageError("unknown command \"\(other)\"; try secure-clearing --help")
    }
} catch let error as UsageError {
    printError("error: \(error.description)")
    exit(2)
} catch let error as OptionList {
    _ = error
    exit(0)
} catch {
    printError("error: \(error)")
    exit(1)
}
