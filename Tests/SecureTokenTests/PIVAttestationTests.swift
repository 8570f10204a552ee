import Foundation
import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureToken

/// The Swift verifier of PIV attestation chains (PIVAttestation.swift), checked against chains that the
/// virtual PIV card's own code makes (tokens/virtual-piv) and against the independent Python oracle
/// (scripts/oracles/piv_attestation.py): both must agree on every chain.
@Suite("PIV attestation")
struct PIVAttestationTests {
    static let repositoryRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()
    static let python = repositoryRoot.appendingPathComponent(".venv/bin/python").path

    /// A card state made by virtual_piv.py's own functions: a generated 9C key (PIN always, touch cached), its
    /// attestation, an imported 9E key (no attestation: the card refuses), and the chain files.
    struct Card {
        let directory: String
        func path(_ name: String) -> String { directory + "/" + name }
        func pem(_ name: String) throws -> [X509Certificate] {
            try X509Certificate.certificates(pem: try String(contentsOfFile: path(name), encoding: .utf8))
        }
        func key(_ name: String) throws -> P256.PublicKey {
            try P256.PublicKey(pem: try String(contentsOfFile: path(name), encoding: .utf8))
        }
    }

    static func makeCard() throws -> Card {
        let directory = NSTemporaryDirectory() + "piv-attestation-\(UUID().uuidString)"
        let script = """
            import sys, os
            sys.path.insert(0, sys.argv[1])
            import virtual_piv as v
            from cryptography.hazmat.primitives.asymmetric import ec
            from cryptography.hazmat.primitives import serialization
            from cryptography import x509
            d = sys.argv[2]
            v.init_state(d, 7000042, "123456", "12345678")
            card = v.Card(d)
            def pub(key, name):
                with open(os.path.join(d, name), "wb") as f:
                    f.write(key.public_key().public_bytes(serialization.Encoding.PEM,
                                                          serialization.PublicFormat.SubjectPublicKeyInfo))
            generated = ec.generate_private_key(ec.SECP256R1())
            card.store_key(0x9C, generated, 3, 3, v.ORIGIN_GENERATED)
            pub(generated, "9c.pub.pem")
            der = card.attest(0x9C, 0, b"")
            with open(os.path.join(d, "9c.attestation.pem"), "wb") as f:
                f.write(x509.load_der_x509_certificate(der).public_bytes(serialization.Encoding.PEM))
            f9 = v.tlv_dict(bytes.fromhex(card.state["objects"]["5fff01"]))[0x70]
            with open(os.path.join(d, "f9.pem"), "wb") as f:
                f.write(x509.load_der_x509_certificate(f9).public_bytes(serialization.Encoding.PEM))
            imported = ec.generate_private_key(ec.SECP256R1())
            card.store_key(0x9E, imported, 2, 1, v.ORIGIN_IMPORTED)
            pub(imported, "9e.pub.pem")
            try:
                card.attest(0x9E, 0, b"")
                print("attested an imported key")
                sys.exit(1)
            except v.CardError:
                pass
            """
        let result = try Run.program(
            python, ["-c", script, repositoryRoot.appendingPathComponent("tokens/virtual-piv").path, directory])
        #expect(result.status == 0, "virtual_piv.py: \(result.stderr) \(result.output)")
        return Card(directory: directory)
    }

    /// The oracle's verdict: its JSON summary, or nil when it finds a problem.
    static func oracle(_ card: Card, key: String, intermediate: Bool = true, root: String? = nil) throws
        -> [String: Any]?
    {
        var arguments = [
            repositoryRoot.appendingPathComponent("scripts/oracles/piv_attestation.py").path, "verify",
            "--attestation", card.path("9c.attestation.pem"), "--f9", card.path("f9.pem"),
            "--root", root ?? card.path("attestation-root.pem"), "--public-key", card.path(key),
        ]
        if intermediate { arguments += ["--intermediate", card.path("attestation-intermediate.pem")] }
        let result = try Run.program(python, arguments)
        guard result.status == 0 else { return nil }
        return try JSONSerialization.jsonObject(with: Data(result.stdout)) as? [String: Any]
    }

    static func sources(_ card: Card, intermediate: Bool = true) throws -> AttestationSources {
        AttestationSources(
            offered: [], roots: AttestationRoots.shipped + (try card.pem("attestation-root.pem")),
            intermediates: intermediate ? try card.pem("attestation-intermediate.pem") : [])
    }

    @Test func aGeneratedKeyVerifiesAsTheOracleSays() throws {
        let card = try Self.makeCard()
        let offered = try card.pem("9c.attestation.pem") + card.pem("f9.pem")
        let verified = try #require(
            try PIVAttestation.verify(key: card.key("9c.pub.pem"), certificates: offered, sources: Self.sources(card)))
        let oracle = try #require(try Self.oracle(card, key: "9c.pub.pem"), "the oracle refuses what Swift accepts")
        #expect(verified.serial == 7_000_042 && (oracle["serial"] as? Int) == 7_000_042)
        #expect(verified.pinPolicy == "always" && oracle["pinPolicy"] as? String == "always")
        #expect(verified.touchPolicy == "cached" && oracle["touchPolicy"] as? String == "cached")
        #expect(verified.firmware == oracle["firmware"] as? String)
        #expect(verified.rootSHA256.uppercased() == oracle["rootSha256"] as? String)
        #expect(verified.chainLength == 4 && oracle["chainLength"] as? Int == 4, "slot, F9, intermediate, root")
        let slot = try card.pem("9c.attestation.pem")[0], f9 = try card.pem("f9.pem")[0]
        let framed =
            [UInt8(slot.der.count >> 8), UInt8(slot.der.count & 0xff)] + slot.der
            + [UInt8(f9.der.count >> 8), UInt8(f9.der.count & 0xff)] + f9.der
        #expect(verified.digest == Hex.encode(SHA256.hash(framed)))
        // The touch prompt reads the same policy (without the chain): "cached" asks for a touch if it blinks.
        #expect(TouchPrompt.need(of: try card.key("9c.pub.pem"), in: offered) == .cached)
        #expect(TouchPrompt.need(of: try card.key("9e.pub.pem"), in: offered) == nil, "no attestation: unknown")
    }

    @Test func anotherKeyIsNotAttested() throws {
        let card = try Self.makeCard()
        let offered = try card.pem("9c.attestation.pem") + card.pem("f9.pem")
        // The imported key has no attestation (the card refused); the 9C attestation is not for it.
        #expect(
            try PIVAttestation.verify(key: card.key("9e.pub.pem"), certificates: offered, sources: Self.sources(card))
                == nil)
        #expect(try Self.oracle(card, key: "9e.pub.pem") == nil, "the oracle also refuses the wrong key")
    }

    @Test func aChainWithoutItsRootOrIntermediateIsRefused() throws {
        let card = try Self.makeCard()
        let offered = try card.pem("9c.attestation.pem") + card.pem("f9.pem")
        #expect(throws: TokenError.self) {
            try PIVAttestation.verify(
                key: card.key("9c.pub.pem"), certificates: offered, sources: Self.sources(card, intermediate: false))
        }
        #expect(try Self.oracle(card, key: "9c.pub.pem", intermediate: false) == nil)
        // Only Yubico's shipped root: the test card never verifies to it.
        #expect(throws: TokenError.self) {
            try PIVAttestation.verify(key: card.key("9c.pub.pem"), certificates: offered, sources: .shipped)
        }
        let yubico = Self.repositoryRoot.appendingPathComponent("tokens/attestation-roots/yubico-piv-ca-1.pem").path
        #expect(try Self.oracle(card, key: "9c.pub.pem", root: yubico) == nil)
        // Without the F9 certificate there is no chain at all.
        #expect(throws: TokenError.self) {
            try PIVAttestation.verify(
                key: card.key("9c.pub.pem"), certificates: try card.pem("9c.attestation.pem"),
                sources: Self.sources(card))
        }
    }

    @Test func aRootFileSplitsIntoRootsAndIntermediates() throws {
        let card = try Self.makeCard()
        let bundle = card.path("roots.pem")
        try
            (String(contentsOfFile: card.path("attestation-intermediate.pem"), encoding: .utf8)
            + String(contentsOfFile: card.path("attestation-root.pem"), encoding: .utf8))
            .write(toFile: bundle, atomically: true, encoding: .utf8)
        let attestation = card.path("attestation.pem")
        try
            (String(contentsOfFile: card.path("9c.attestation.pem"), encoding: .utf8)
            + String(contentsOfFile: card.path("f9.pem"), encoding: .utf8))
            .write(toFile: attestation, atomically: true, encoding: .utf8)
        let sources = try AttestationSources.load(attestationFile: attestation, rootFile: bundle)
        #expect(sources.roots.count == AttestationRoots.shipped.count + 1 && sources.intermediates.count == 1)
        #expect(sources.offered.count == 2)
        #expect(
            try PIVAttestation.verify(key: card.key("9c.pub.pem"), certificates: sources.offered, sources: sources)
                != nil)
    }

    /// The built-in root is tokens/attestation-roots/yubico-piv-ca-1.pem byte for byte, with the SHA-256 that
    /// the folder's README and the oracle pin.
    @Test func theShippedRootIsPinned() throws {
        let file = Self.repositoryRoot.appendingPathComponent("tokens/attestation-roots/yubico-piv-ca-1.pem").path
        let fromFile = try X509Certificate.certificates(pem: try String(contentsOfFile: file, encoding: .utf8))
        #expect(AttestationRoots.shipped.map(\.der) == fromFile.map(\.der))
        #expect(
            Hex.encode(AttestationRoots.shipped[0].fingerprint).uppercased()
                == "63ECE914E54DD87915F34033C85AF4C0696BA1512F8ADD66CED738331207B546")
        #expect(AttestationRoots.shipped[0].isIssued(by: AttestationRoots.shipped[0]))
        #expect(AttestationRoots.shipped[0].subject.contains("Yubico PIV Root CA Serial 263751"))
    }

    @Test func malformedCertificatesAreRefusedNotTrapped() throws {
        let root = AttestationRoots.shipped[0].der
        for length in [0, 1, 10, root.count - 1] {
            #expect(throws: CryptoError.self) { try X509Certificate(der: Array(root.prefix(length))) }
        }
        #expect(throws: CryptoError.self) { try X509Certificate(der: root + [0]) }
        #expect(throws: CryptoError.self) {
            try X509Certificate.certificates(pem: "-----BEGIN CERTIFICATE-----\nAAAA\n")
        }
    }
}
