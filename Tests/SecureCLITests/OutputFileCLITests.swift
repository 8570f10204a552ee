import Foundation
import SecureTestSupport
import Testing

/// Issue 13, case 5: output files are never followed, replaced or lost. `spend --out` takes the file's name
/// (O_EXCL, O_NOFOLLOW) before the debit; the file is written through a new temporary file; a payment whose
/// file could not be written stays exportable with `secure pending --export`.
@Suite("Output files: never followed, never replaced, never lost", .serialized)
struct OutputFileCLITests {
    typealias World = WalletCLITests.World

    func spend(_ world: World, to out: String) throws -> ProcessResult {
        try world.run(
            ["spend", "--to", "bob.card", "--amount", "1.00 EUR", "--category", "x", "--out", out]
                + world.wallet("alice"))
    }

    @Test func aPlantedLinkOrFileIsRefusedBeforeTheDebit() throws {
        let world = try World()
        try world.fund("alice", "10.00 EUR")
        let victim = world.directory + "/victim"
        try "do not touch\n".write(toFile: victim, atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: world.directory + "/link", withDestinationPath: victim)
        for out in ["link", "victim"] {
            let result = try spend(world, to: out)
            #expect(result.status == 2 && result.stderr.contains("never overwritten"), "\(out): \(result.stderr)")
        }
        #expect(try String(contentsOfFile: victim, encoding: .utf8) == "do not touch\n")
        #expect(try world.run(["balance"] + world.wallet("alice")).output.contains("10.00 EUR"), "nothing debited")
        #expect(try world.run(["pending"] + world.wallet("alice")).output.contains("no unconfirmed"))
    }

    /// A full disk (a 4 KiB tmpfs filled up): the debit is committed, the file cannot be written, the command
    /// says so with exit 1 and the way out, and `pending --export` writes the same transfer again.
    @Test func aFullDiskLeavesAnExportablePendingPayment() throws {
        let world = try World()
        try world.fund("alice", "10.00 EUR")
        let tiny = world.directory + "/tiny"
        try FileManager.default.createDirectory(atPath: tiny, withIntermediateDirectories: true)
        let mount = try Run.program("/bin/mount", ["-t", "tmpfs", "-o", "size=4k", "tmpfs", tiny])
        try #require(mount.status == 0, "this test mounts a tmpfs (it runs as root in CI): \(mount.stderr)")
        defer { _ = try? Run.program("/bin/umount", [tiny]) }
        _ = try Run.program("/bin/dd", ["if=/dev/zero", "of=\(tiny)/fill", "bs=1k", "count=64"])
        let full = try spend(world, to: "tiny/t1")
        #expect(full.status == 1 && full.stderr.contains("pending --export"), "\(full.stderr)")
        let pending = try world.run(["pending", "--json"] + world.wallet("alice"))
        let listing = try JSONSerialization.jsonObject(with: Data(pending.stdout)) as? [String: Any]
        let rows = listing?["payments"] as? [[String: Any]]
        let id = try #require(rows?.first?["transferID"] as? String, "\(pending.output)")
        let export = try world.run(["pending", "--export", id, "--out", "t1"] + world.wallet("alice"))
        #expect(export.status == 0, "\(export.stderr)")
        let again = try world.run(["pending", "--export", id, "--out", "t1"] + world.wallet("alice"))
        #expect(again.status == 2 && again.stderr.contains("never overwritten"))
        let accept = try world.run(["accept", "t1", "--no-proximity"] + world.wallet("bob"))
        #expect(accept.status == 0, "\(accept.stderr)")
        #expect(try world.run(["balance"] + world.wallet("bob")).output.contains("1.00 EUR"))
    }

    /// A read-only or full file system names the path and the cause, with exit 1, never a Foundation or
    /// SQLite dump ("Error Domain=NSCocoaErrorDomain Code=642", "SQLite error 10: disk I/O error").
    @Test func aReadOnlyOrFullFileSystemNamesThePathAndTheCause() throws {
        let world = try World(wallets: ["alice"])
        for label in ["spare", "spare-bk"] {
            #expect(try world.run(["token", "init-demo", "--dir", "toks", "--label", label]).status == 0)
        }
        func initialize(_ folder: String, _ token: String) throws -> ProcessResult {
            try world.run([
                "wallet", "init", "--wallet", folder, "--token", "pkcs11:token=\(token)?module-name=softhsm2",
                "--pin-source", "file:toks/\(token).pin", "--backup-token",
                "pkcs11:token=\(token)-bk?module-name=softhsm2", "--backup-pin-source", "file:toks/\(token)-bk.pin",
            ])
        }
        for (name, options, token, cause) in [
            ("readonly", "ro,size=1m", "issuer", "Read-only file system"),
            ("full", "size=8k", "spare", "No space left on device"),
        ] {
            let folder = world.directory + "/" + name
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            let mount = try Run.program("/bin/mount", ["-t", "tmpfs", "-o", options, "tmpfs", folder])
            try #require(mount.status == 0, "this test mounts a tmpfs (it runs as root in CI): \(mount.stderr)")
            defer { _ = try? Run.program("/bin/umount", [folder]) }
            let result = try initialize(name + "/w", token)
            #expect(result.status == 1, "\(name): \(result.stderr)")
            #expect(
                result.stderr.contains(cause) && result.stderr.contains(name + "/w")
                    && !result.stderr.contains("Error Domain") && !result.stderr.contains("SQLite error"),
                "\(name): \(result.stderr)")
        }
    }
}
