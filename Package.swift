import Foundation
// swift-tools-version:6.0
// The S.E.C.U.R.E wallet for hardware tokens. Every dependency outside the toolchain is a C library
// wrapped as a system-library target, because no outside Swift package can be fetched on these machines.
import PackageDescription

let package = Package(
    name: "secure",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "secure", targets: ["secure"]),
        // Every benchmark, outside the wallet's binary (docs/PERFORMANCE.md).
        .executable(name: "secure-bench", targets: ["secure-bench"]),
        // The issuer's clearing service (docs/CLEARING.md §3), outside the wallet's binary.
        .executable(name: "secure-clearing", targets: ["secure-clearing"]),
    ],
    targets: [
        // C libraries: a module map and a shim header each, nothing else.
        .systemLibrary(name: "CLibCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CP11Kit", pkgConfig: "p11-kit-1", providers: [.apt(["libp11-kit-dev"])]),
        .systemLibrary(name: "CSQLCipher", pkgConfig: "sqlcipher", providers: [.apt(["libsqlcipher-dev"])]),
        .systemLibrary(name: "CAvahi", pkgConfig: "avahi-client", providers: [.apt(["libavahi-client-dev"])]),
        // The clearing's HTTP server, its PostgreSQL client, and the wallet's HTTP client (docs/CLEARING.md §6).
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CLibPQ", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // The raw PKCS#11 sign and append loops that set the benchmarks' baselines; C is the point here.
        // Only SecureBench links it.
        .target(name: "CPKCS11Baseline", dependencies: ["CP11Kit"]),

        // valgrind's client requests, so the constant-time check can mark secrets; no-ops outside valgrind.
        .target(name: "CValgrindShim"),
        // prctl and setrlimit for switching core dumps off (prctl is variadic: Swift cannot call it).
        .target(name: "CProcessSafety"),
        .target(name: "CBuildInfo"),

        // Optimised even in debug builds: unoptimised SIMD and pointer code makes ML-KEM ~50× slower, which
        // turned the known-answer tests into minutes. Debug builds of every other module stay -Onone.
        // Argument parsing and plain output for the executables; no wallet code, no project imports.
        .target(name: "CommandLineSupport"),
        .target(
            name: "SecureCrypto", dependencies: ["CLibCrypto", "CValgrindShim"],
            swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]),
        .target(name: "SecureCore", dependencies: ["SecureCrypto"]),
        .target(name: "SecureToken", dependencies: ["SecureCrypto", "CP11Kit", "CProcessSafety"]),
        .target(name: "SecureStore", dependencies: ["SecureCore", "SecureCrypto", "CSQLCipher"]),
        .target(name: "SecureChannel", dependencies: ["SecureCrypto"]),
        // DNS-SD announce and browse through the system's Avahi daemon; what an announcement holds is SecureCore's.
        .target(name: "SecureDiscovery", dependencies: ["SecureCore", "CAvahi"]),
        // `secure report`'s pure parts: the figures from the ledger's entries, the charts' geometry, escaping and
        // the HTML page; no files, tokens or databases.
        .target(name: "SecureReport", dependencies: ["SecureCore", "SecureCrypto"]),
        // The issuer's clearing service (docs/CLEARING.md §3): HTTP through libmicrohttpd (HTTPServer.swift), storage
        // in PostgreSQL through libpq (Postgres.swift), the schema's migrations; the clearing's rules are SecureCore's.
        .target(
            name: "SecureClearing",
            dependencies: ["SecureCore", "SecureCrypto", "SecureToken", "CMicroHTTPD", "CLibPQ"]),
        .executableTarget(
            name: "secure-clearing", dependencies: ["CommandLineSupport", "SecureClearing", "SecureCore"]),
        // The wallet's client of the clearing: HTTPS with a pinned key through libcurl (HTTPClient.swift).
        .target(name: "SecureSync", dependencies: ["SecureCore", "SecureCrypto", "CCurl"]),
        // The wallet: create, open, append, operations, rotation, recovery, files, proofs, audit, peers' key logs.
        .target(name: "SecureWallet", dependencies: ["SecureCore", "SecureCrypto", "SecureStore", "SecureToken"]),
        // CLibCrypto only for SoftwareSigner, the test-only P-256 signer; production code has no software key.
        .target(
            name: "SecureTestSupport",
            dependencies: [
                "SecureCore", "SecureCrypto", "SecureToken", "SecureStore", "SecureWallet",
                "CLibCrypto",
            ]),
        // The deterministic simulator (issue 7): the real machines, ledger and SQLCipher store, with a simulated
        // token, link and clock from SecureTestSupport. Never linked into `secure`.
        .target(
            name: "SecureSimulation",
            dependencies: [
                "SecureCore", "SecureCrypto", "SecureStore", "SecureToken", "SecureWallet",
                "SecurePeer", "SecureTestSupport",
            ]),
        .executableTarget(name: "secure-sim", dependencies: ["SecureSimulation"]),
        .target(
            name: "SecurePeer",
            dependencies: [
                "SecureCore", "SecureCrypto", "SecureStore", "SecureToken", "SecureWallet",
                "SecureChannel",
            ]),
        // Rehearsal (issue 18, docs/TILL.md §4): both sides of a till payment in one process, on the real
        // machines and a real channel handshake, with in-memory rehearsal tokens and wallets on tmpfs; every
        // signature under the rehearsal label. Linked into `secure`; never SecureTestSupport.
        .target(
            name: "SecureRehearsal",
            dependencies: [
                "SecureCore", "SecureCrypto", "SecureStore", "SecureToken", "SecureWallet", "SecurePeer",
                "SecureChannel",
            ]),
        .executableTarget(
            name: "secure",
            dependencies: [
                "CBuildInfo", "CommandLineSupport", "SecureCore", "SecureCrypto", "SecureToken", "SecureStore",
                "SecureWallet",
                "SecurePeer", "SecureChannel", "SecureDiscovery", "SecureReport", "SecureRehearsal",
                "SecureSync",
            ]),
        // Every benchmark and its fixtures, never linked into `secure`: the library holds the measurements and
        // their C baselines (through SecureToken's, SecureStore's and SecureWallet's @_spi(Benchmark) API); the
        // executable adds the verification fixture, the only part that needs the test-only software signer.
        .target(
            name: "SecureBench",
            dependencies: [
                "CommandLineSupport", "SecureCore", "SecureCrypto", "SecureToken", "SecureStore", "SecureWallet",
                "SecurePeer", "SecureChannel", "SecureDiscovery", "CP11Kit", "CPKCS11Baseline",
                // BenchPay's issuer is SecureTestSupport's TestIssuer: declared, so that no build order leaves
                // the module missing.
                "SecureTestSupport",
            ]),
        .executableTarget(
            name: "secure-bench",
            dependencies: [
                "SecureBench", "SecureCore", "SecureCrypto", "SecureStore",
                "SecureToken", "SecureTestSupport",
            ]),
        // TEST TOOL ONLY, never a product: a receiver that sends a note and name the stock binary refuses to send,
        // for the tests of what a payer's terminal shows (SecureCLITests.HostilePeerTextTests).
        .executableTarget(
            name: "secure-hostile-peer",
            dependencies: [
                "CommandLineSupport", "SecureCore", "SecureToken", "SecureWallet", "SecurePeer", "SecureChannel",
            ]),
        // Runs secret-dependent code with the secrets marked for valgrind; driven by scripts/ct-check.
        .executableTarget(name: "ct-harness", dependencies: ["SecureCrypto", "CValgrindShim"]),

        .testTarget(name: "SecureCryptoTests", dependencies: ["SecureCrypto", "SecureCore", "SecureTestSupport"]),
        .testTarget(name: "SecureCoreTests", dependencies: ["SecureCore", "SecureTestSupport"]),
        .testTarget(name: "SecureReportTests", dependencies: ["SecureReport", "SecureCore", "SecureTestSupport"]),
        .testTarget(name: "SecureTokenTests", dependencies: ["SecureToken", "SecureTestSupport"]),
        .testTarget(name: "SecureStoreTests", dependencies: ["SecureStore", "SecureTestSupport"]),
        .testTarget(
            name: "SecurePeerTests",
            dependencies: [
                "SecurePeer", "SecureWallet", "SecureStore", "SecureTestSupport",
                "SecureBench",
            ]),
        .testTarget(
            name: "SecureCLITests",
            dependencies: ["SecureTestSupport", "SecureWallet", "SecureStore", "SecureChannel", "SecureRehearsal"]),
        .testTarget(name: "SecureChannelTests", dependencies: ["SecureChannel", "SecureTestSupport"]),
        .testTarget(name: "SecureSimulationTests", dependencies: ["SecureSimulation"]),
        .testTarget(
            name: "SecureRehearsalTests",
            dependencies: ["SecureRehearsal", "SecureTestSupport", "SecureWallet", "SecureStore"]),
        .testTarget(name: "SecureBenchTests", dependencies: ["SecureBench", "SecureTestSupport"]),
        .testTarget(
            name: "SecureClearingTests", dependencies: ["SecureClearing", "SecureSync", "SecureTestSupport"]),
    ]
)

// libFuzzer targets (docs/FUZZING.md), only when SECURE_FUZZ=1: they need -sanitize=fuzzer to link
// (libFuzzer supplies main), so an ordinary build must never see them. scripts/fuzz builds and runs them.
if ProcessInfo.processInfo.environment["SECURE_FUZZ"] == "1" {
    for name in ["FuzzChannelFrame", "FuzzChannelHandshake", "FuzzChannelRecord"] {
        package.targets.append(
            .executableTarget(
                name: name, dependencies: ["SecureChannel", "SecureCrypto"], path: "Fuzz/\(name)",
                swiftSettings: [.unsafeFlags(["-parse-as-library"])]))
    }
    // Every other decoder that reads outside bytes, one binary with a selector byte (docs/FUZZING.md). It
    // needs SecureTestSupport's software signer to re-sign mutated statements with a fixed test key.
    package.targets.append(
        .executableTarget(
            name: "FuzzDecoders",
            dependencies: [
                "SecureCore", "SecureCrypto", "SecureStore", "SecureToken", "SecureWallet", "SecureTestSupport",
            ],
            path: "Fuzz/FuzzDecoders", swiftSettings: [.unsafeFlags(["-parse-as-library"])]))
}
