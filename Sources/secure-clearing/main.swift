// secure-clearing: the issuer's clearing service (docs/CLEARING.md §3).
//   secure-clearing migrate --db URL
//   secure-clearing serve --db URL --listen ADDR [--tls-key F --tls-cert F | --tls-terminated-by-proxy]
//       [--threads N] [--db-connections N] --issuer-card FILE --clearing-key PKCS11-URI --pin-file FILE
//       [--unsynced-after DURATION]
//   secure-clearing report --db URL --issuer-card FILE [--unsynced-after DURATION]
// Exit codes: 0 success, 1 failure, 2 usage error.
import CommandLineSupport
import Foundation
import SecureClearing
import SecureCore

let usage = """
    Usage:
      secure-clearing migrate --db URL
          Brings the database's schema to this binary's version (each migration once, under a lock).
      secure-clearing serve --db URL --listen HOST:PORT (--tls-key FILE --tls-cert FILE | --tls-terminated-by-proxy)
          [--threads N] [--db-connections N] --issuer-card FILE --clearing-key PKCS11-URI --pin-file FILE
          [--unsynced-after DURATION] [--allow-unproven-origin] [--allow-unenforced-pin]
          Serves the clearing's HTTP API (docs/CLEARING.md §3.3). TLS from PEM key and certificate files, or plain
          HTTP on loopback behind a TLS terminator. Refuses a database not at this binary's schema version.
          FILE of --issuer-card is the issuer's wallet card (`secure wallet show --card`); the key of
          --clearing-key must be the clearing key its log delegates in force, on a token whose PIN is in the
          --pin-file (held for the process's life). --unsynced-after (default 7d; 30s, 5m, 12h, 7d) is how long
          a wallet may go unsynced before it is listed. Without --issuer-card, serve --db answers only
          GET /v1/health.
          Prints "listening HOST:PORT" once it accepts connections; SIGINT or SIGTERM stops it.

      secure-clearing report --db URL --issuer-card FILE [--unsynced-after DURATION]
          Conservation per asset (docs/CLEARING.md §2.8): each term, the unsynced wallets' count and oldest age,
          and the residue (zero when every record and balance agrees); then the listings in force with their
          grounds and digests. Exit 0, or 1 when a residue is not zero.

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
        words,
        options: [
            "db", "listen", "tls-key", "tls-cert", "threads", "db-connections", "issuer-card", "clearing-key",
            "pin-file", "unsynced-after", "store",
        ],
        flags: ["tls-terminated-by-proxy", "allow-unproven-origin", "allow-unenforced-pin"])
    _ = try arguments.positionals(0, "no arguments besides the options")
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

    let handler: HTTPHandler
    var stopService: () -> Void = {}
    switch arguments.value("store") {
    case "memory"?:
        // Hidden: the in-memory store, for tests until the PostgreSQL store is built; nothing survives the process.
        let (service, close) = try memoryService(arguments)
        handler = { service.handle($0) }
        stopService = close
    case nil, "postgres"?:
        let database = try arguments.required("db")
        try ClearingSchema.requireCurrent(try PostgresConnection(database))
        let pool = PostgresPool(database, size: connections)
        if arguments.value("issuer-card") == nil {
            // Without the clearing's identity, the process answers only its health (for probes and tests).
            let service = ClearingHealthService(pool: pool)
            handler = { service.handle($0) }
        } else {
            let (service, close) = try postgresService(arguments, pool: pool)
            handler = { service.handle($0) }
            stopService = close
        }
    case let other?:
        throw UsageError("--store is memory or postgres, not \(other)")
    }

    // SIGINT and SIGTERM are blocked before any thread starts, so every thread inherits the mask and only the
    // main thread's sigwait receives them.
    var signals = sigset_t()
    sigemptyset(&signals)
    sigaddset(&signals, SIGINT)
    sigaddset(&signals, SIGTERM)
    pthread_sigmask(SIG_BLOCK, &signals, nil)

    var configuration = HTTPServerConfiguration(listen: listen, tls: tls) { method, path in
        ClearingRoutes.bodyLimit(method: method, path: path)
    }
    // Each claim holds its thread while it waits for its batch (at most a second): more threads than cores
    // keep the other routes answering meanwhile.
    configuration.threadCount = threads
    let server = try HTTPServer(configuration, handler: handler)
    let host = listen[..<(listen.lastIndex(of: ":") ?? listen.endIndex)]
    print("listening \(host):\(server.port)")
    fflush(nil)
    var received: Int32 = 0
    sigwait(&signals, &received)
    server.stop()
    stopService()
    printError("secure-clearing: stopped by signal \(received)")
}

/// `secure-clearing report`: the conservation terms and the listings, read from the database.
func report(_ words: [String]) throws {
    let arguments = try Arguments(words, options: ["db", "issuer-card", "unsynced-after"], flags: [])
    _ = try arguments.positionals(0, "no arguments besides the options")
    let database = try arguments.required("db")
    try ClearingSchema.requireCurrent(try PostgresConnection(database))
    let log = try ClearingServe.issuerLog(cardFile: try arguments.required("issuer-card"))
    let configuration = try serviceConfiguration(arguments)
    let store = PostgresClearingStore(pool: PostgresPool(database, size: 1), issuer: log.walletID)
    let book = ClearingBook(issuer: log.walletID, store: store)
    let now = ClearingClock.unixMilliseconds()
    let unsyncedAfter = configuration.unsyncedAfterMilliseconds
    var balanced = true
    func money(_ units: Int64, _ asset: Asset) -> String {
        (try? Money(minorUnits: units, currency: asset.currency)).map(\.description) ?? "\(units) minor units"
    }
    for term in try book.conservation(now: now, unsyncedAfter: unsyncedAfter) {
        let asset = term.asset
        print("asset \(asset.currency) of issuer \(asset.issuer.hex.prefix(16))…")
        print("  minted                \(money(term.minted, asset))")
        print("  redeemed              \(money(term.redeemed, asset))")
        print("  synced balances       \(money(term.syncedBalances, asset))")
        let age = term.oldestUnsyncedAge.map { " (oldest \($0 / 1000) s)" } ?? ""
        print("  unsynced balances     \(money(term.unsyncedBalances, asset)) in \(term.unsyncedCount) wallets\(age)")
        print("  undeposited vouchers  \(money(term.undepositedVouchers, asset))")
        print("  deposits before mint  \(money(term.depositsWithoutMint, asset))")
        print("  in flight (debits)    \(money(term.debitsWithoutCredit, asset))")
        print("  unmatched credits     \(money(term.creditsWithoutDebit, asset))")
        print("  residue               \(money(term.residue, asset))")
        for wallet in term.walletsWithResidue {
            print("    wallet \(wallet.wallet.hex.prefix(16))… differs by \(wallet.difference) minor units")
        }
        if term.residue != 0 { balanced = false }
    }
    let listings = try book.listings(now: now, unsyncedAfter: unsyncedAfter)
    print(listings.isEmpty ? "listings: none" : "listings:")
    for listing in listings {
        print("  \(listing.wallet.hex.prefix(16))…  \(listing.grounds)  \(listing.digest.hex)")
    }
    fflush(nil)
    if !balanced { exit(1) }
}

/// The service over PostgreSQL, with the issuer's card, the clearing key and its PIN file.
func postgresService(_ arguments: Arguments, pool: PostgresPool) throws -> (
    service: ClearingService<PostgresClearingStore>, close: () -> Void
) {
    let configuration = try serviceConfiguration(arguments)
    return try ClearingServe.service(
        issuerCard: try arguments.required("issuer-card"), clearingKey: try arguments.required("clearing-key"),
        pinFile: try arguments.required("pin-file"), allowUnprovenOrigin: arguments.flag("allow-unproven-origin"),
        allowUnenforcedPIN: arguments.flag("allow-unenforced-pin"), configuration: configuration
    ) { issuer in PostgresClearingStore(pool: pool, issuer: issuer) }
}

func serviceConfiguration(_ arguments: Arguments) throws -> ClearingServiceConfiguration {
    var configuration = ClearingServiceConfiguration()
    if let text = arguments.value("unsynced-after") {
        guard let milliseconds = ClearingServe.milliseconds(duration: text) else {
            throw UsageError("--unsynced-after \(text) is not a duration such as 30s, 5m, 12h or 7d")
        }
        configuration.unsyncedAfterMilliseconds = milliseconds
    }
    return configuration
}

/// The service over the in-memory store, with the issuer's card, the clearing key and its PIN file.
func memoryService(_ arguments: Arguments) throws -> (
    service: ClearingService<LockedInMemoryClearingStore>, close: () -> Void
) {
    var configuration = ClearingServiceConfiguration()
    if let text = arguments.value("unsynced-after") {
        guard let milliseconds = ClearingServe.milliseconds(duration: text) else {
            throw UsageError("--unsynced-after \(text) is not a duration such as 30s, 5m, 12h or 7d")
        }
        configuration.unsyncedAfterMilliseconds = milliseconds
    }
    return try ClearingServe.memoryService(
        issuerCard: try arguments.required("issuer-card"), clearingKey: try arguments.required("clearing-key"),
        pinFile: try arguments.required("pin-file"), allowUnprovenOrigin: arguments.flag("allow-unproven-origin"),
        allowUnenforcedPIN: arguments.flag("allow-unenforced-pin"), configuration: configuration)
}

let words = Array(CommandLine.arguments.dropFirst())
do {
    switch words.first {
    case "migrate": try migrate(Array(words.dropFirst()))
    case "serve": try serve(Array(words.dropFirst()))
    case "report": try report(Array(words.dropFirst()))
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
