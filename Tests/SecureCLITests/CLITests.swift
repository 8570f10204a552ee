import Foundation
import SecureTestSupport
import Testing

/// The `secure` command: arguments in; stdout, stderr and exit code out. Each test runs the real binary
/// against a SoftHSM token in a folder of its own.
@Suite("secure command line")
struct CLITests {
    /// A fresh demo folder with one token and the environment that points SoftHSM at it.
    struct Demo {
        let directory: String
        let environment: [String: String]
        let tokenURI: String
        let pinSource: String

        init(label: String = "cli") throws {
            directory =
                FileManager.default.temporaryDirectory.appendingPathComponent("secure-cli-\(UUID().uuidString)").path
            environment = ["SOFTHSM2_CONF": directory + "/softhsm2.conf"]
            let result = try Run.program(Run.secure, ["token", "init-demo", "--dir", directory, "--label", label])
            guard result.status == 0 else { throw CLIFailure(result.stderr) }
            tokenURI = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
            pinSource = "file:\(directory)/\(label).pin"
        }

        func run(_ arguments: [String], input: [UInt8] = []) throws -> ProcessResult {
            try Run.program(Run.secure, arguments, environment: environment, input: input, directory: directory)
        }

        /// Generates a signing key and returns its URI.
        func generateKey(_ label: String = "wallet") throws -> String {
            let result = try run(["keys", "generate", "--token", tokenURI, "--label", label, "--pin-source", pinSource])
            guard result.status == 0 else { throw CLIFailure(result.stderr) }
            return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        }
    }

    struct CLIFailure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }

    @Test func helpAndUsageErrors() throws {
        let help = try Run.program(Run.secure, ["--help"])
        #expect(help.status == 0)
        #expect(help.output.contains("Exit codes"))
        for command in [["token", "--help"], ["keys", "--help"], ["sign", "--help"], ["verify", "--help"]] {
            let result = try Run.program(Run.secure, command)
            #expect(result.status == 0, "\(command)")
            #expect(result.output.contains("Usage"), "\(command)")
        }
        let none = try Run.program(Run.secure, [])
        #expect(none.status == 2)
        let unknown = try Run.program(Run.secure, ["frobnicate"])
        #expect(unknown.status == 2)
        #expect(unknown.stderr.contains("unknown command \"frobnicate\""))
        let badOption = try Run.program(Run.secure, ["keys", "list", "--colour"])
        #expect(badOption.status == 2)
        #expect(badOption.stderr.contains("unknown option --colour"))
        let missing = try Run.program(Run.secure, ["sign", "file"])
        #expect(missing.status == 2)
        #expect(missing.stderr.contains("--key is required"))
    }

    /// `secure --help` comes from the command table that dispatch reads: every command it lists runs its
    /// own `--help`, and every exit code 0–12 is listed with a meaning.
    @Test func topHelpListsEveryCommandAndExitCode() throws {
        let help = try Run.program(Run.secure, ["--help"]).output
        #expect(
            help.range(of: #"[Ii]ssue \d"#, options: .regularExpression) == nil, "no issue numbers in user-facing help")
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        let commandLines = lines.filter { $0.hasPrefix("  ") && $0.dropFirst(2).first?.isLowercase == true }
        let names = commandLines.map { line in
            // The call ends where the summary's column gap begins; the name is its leading lowercase words.
            String(line.dropFirst(2)).components(separatedBy: "  ")[0].split(separator: " ")
                .prefix { $0 == $0.lowercased() && $0.first?.isLetter == true }.joined(separator: " ")
        }
        #expect(names.count >= 30, "\(names)")
        for expected in [
            "balance", "history", "pending", "budget show", "receive", "pay", "retry", "ledger repair",
            "audit export", "evidence verify", "wallet recover", "keys rotate",
        ] {
            #expect(names.contains(expected), "\(expected) is listed")
        }
        #expect(!names.contains("bench"))
        for name in names {
            let result = try Run.program(Run.secure, name.split(separator: " ").map(String.init) + ["--help"])
            #expect(result.status == 0 && result.output.contains("Usage"), "secure \(name) --help")
        }
        let codes = lines.drop { $0 != "Exit codes:" }.dropFirst().prefix { !$0.isEmpty }
            .compactMap { Int($0.split(separator: " ").first ?? "") }
        #expect(codes == Array(0...12), "\(codes)")
    }

    @Test func initGenerateExportSignVerify() throws {
        let demo = try Demo()
        let keyURI = try demo.generateKey()
        #expect(keyURI.hasPrefix("pkcs11:token=cli;"))
        #expect(keyURI.contains("object=wallet"))

        let list = try demo.run(["keys", "list", "--json"])
        #expect(list.status == 0)
        let listing = try JSONSerialization.jsonObject(with: Data(list.stdout)) as? [String: Any]
        #expect(listing?["format"] as? String == "secure-key-list-v2")
        let rows = listing?["keys"] as? [[String: Any]]
        #expect(rows?.count == 1)
        #expect(rows?.first?["label"] as? String == "wallet")

        let pem = try demo.run(["keys", "export", keyURI, "--pem"])
        #expect(pem.status == 0)
        #expect(pem.output.hasPrefix("-----BEGIN PUBLIC KEY-----"))
        try pem.output.write(toFile: demo.directory + "/pub.pem", atomically: true, encoding: .utf8)
        let der = try demo.run(["keys", "export", keyURI])
        #expect(der.stdout.count == 91)

        let statement = "pay 4.50 EUR to bob\n"
        try statement.write(toFile: demo.directory + "/statement.txt", atomically: true, encoding: .utf8)
        let signature = try demo.run(["sign", "--key", keyURI, "--pin-source", demo.pinSource, "statement.txt"])
        #expect(signature.status == 0, "\(signature.stderr)")
        try Data(signature.stdout).write(to: URL(fileURLWithPath: demo.directory + "/sig.der"))

        // Anyone can check it with the openssl command line, exactly as documented.
        let openssl = try Run.program(
            "/bin/sh",
            [
                "-c",
                "(printf 'secure-file-v1\\0'; cat statement.txt) | openssl dgst -sha256 -verify pub.pem -signature sig.der",
            ],
            directory: demo.directory)
        #expect(openssl.status == 0, "\(openssl.stderr)")
        #expect(openssl.output.contains("Verified OK"))

        let verify = try demo.run(["verify", "--pubkey", "pub.pem", "--sig", "sig.der", "statement.txt"])
        #expect(verify.status == 0)
        #expect(verify.output.contains("signature OK"))

        try (statement + "x").write(toFile: demo.directory + "/statement.txt", atomically: true, encoding: .utf8)
        let tampered = try demo.run(["verify", "--pubkey", "pub.pem", "--sig", "sig.der", "statement.txt"])
        #expect(tampered.status == 7)
        #expect(tampered.stderr.contains("INVALID"))

        try Data([0x30, 0x02, 0x02]).write(to: URL(fileURLWithPath: demo.directory + "/junk.der"))
        let junk = try demo.run(["verify", "--pubkey", "pub.pem", "--sig", "junk.der", "statement.txt"])
        #expect(junk.status == 7)
    }

    @Test func pinSourcesFromEnvironmentFileDescriptorAndURI() throws {
        let demo = try Demo()
        let keyURI = try demo.generateKey()
        try "data".write(toFile: demo.directory + "/f", atomically: true, encoding: .utf8)
        let pin = try String(contentsOfFile: demo.directory + "/cli.pin", encoding: .utf8).trimmingCharacters(
            in: .newlines)
        let viaEnvironment = try Run.program(
            Run.secure, ["sign", "--key", keyURI, "--pin-source", "env:SECURE_TEST_PIN", "f"],
            environment: demo.environment.merging(["SECURE_TEST_PIN": pin]) { $1 },
            directory: demo.directory)
        #expect(viaEnvironment.status == 0, "\(viaEnvironment.stderr)")
        let viaStdin = try demo.run(
            ["sign", "--key", keyURI, "--pin-source", "fd:0", "f"], input: Array((pin + "\n").utf8))
        #expect(viaStdin.status == 0, "\(viaStdin.stderr)")
        let viaURI = try demo.run(["sign", "--key", keyURI + "&pin-source=file:\(demo.directory)/cli.pin", "f"])
        #expect(viaURI.status == 0, "\(viaURI.stderr)")
        let noSource = try demo.run(["sign", "--key", keyURI, "f"])
        #expect(noSource.status == 3)
        #expect(noSource.stderr.contains("--pin-source"))
    }

    @Test func failureCasesHaveClearMessagesAndExitCodes() throws {
        let demo = try Demo()
        let keyURI = try demo.generateKey()
        try "data".write(toFile: demo.directory + "/f", atomically: true, encoding: .utf8)
        try "11111111\n".write(toFile: demo.directory + "/wrong.pin", atomically: true, encoding: .utf8)
        let open = try demo.run(["sign", "--key", keyURI, "--pin-source", "file:wrong.pin", "f"])
        #expect(open.status == 3 && open.stderr.contains("chmod 600 wrong.pin"), "\(open.stderr)")
        try FileManager.default.setAttributes(
            [.posixPermissions: 0o600], ofItemAtPath: demo.directory + "/wrong.pin")

        let wrongPIN = try demo.run(["sign", "--key", keyURI, "--pin-source", "file:wrong.pin", "f"])
        #expect(wrongPIN.status == 3)
        #expect(wrongPIN.stderr.contains("CKR_PIN_INCORRECT"))
        #expect(wrongPIN.stdout.isEmpty)

        let noToken = try demo.run([
            "sign", "--key", "pkcs11:token=absent;object=wallet?module-name=softhsm2",
            "--pin-source", demo.pinSource, "f",
        ])
        #expect(noToken.status == 5)
        #expect(noToken.stderr.contains("no token matches"))

        let noModule = try demo.run(["keys", "list", "--token", "pkcs11:?module-name=absent-module"])
        #expect(noModule.status == 5)

        let noKey = try demo.run([
            "sign", "--key", demo.tokenURI.replacingOccurrences(of: "?", with: ";object=absent?"),
            "--pin-source", demo.pinSource, "f",
        ])
        #expect(noKey.status == 6)
        #expect(noKey.stderr.contains("no P-256 private key matches"))

        let badURI = try demo.run(["sign", "--key", "pkcs11:tokn=x", "f"])
        #expect(badURI.status == 2)
        #expect(badURI.stderr.contains("unknown path attribute \"tokn\""))

        let missingFile = try demo.run(["sign", "--key", keyURI, "--pin-source", demo.pinSource, "absent.txt"])
        #expect(missingFile.status == 2)
        #expect(missingFile.stderr.contains("absent.txt"))

        let badSource = try demo.run(["sign", "--key", keyURI, "--pin-source", "pin:1234", "f"])
        #expect(badSource.status == 3)
    }

    @Test func tokenListShowsTheDemoTokenAndItsPINState() throws {
        let demo = try Demo(label: "listed")
        let text = try demo.run(["token", "list", "--token", "pkcs11:?module-name=softhsm2"])
        #expect(text.status == 0)
        #expect(text.output.contains("token \"listed\""))
        #expect(text.output.contains("PIN state  ok"))
        let json = try demo.run(["token", "list", "--json", "--token", "pkcs11:?module-name=softhsm2"])
        let listing = try JSONSerialization.jsonObject(with: Data(json.stdout)) as? [String: Any]
        let modules = listing?["modules"] as? [[String: Any]]
        let tokens = modules?.first?["tokens"] as? [[String: Any]]
        #expect(tokens?.first?["label"] as? String == "listed")
        #expect(tokens?.first?["pinState"] as? String == "ok")
    }
}
