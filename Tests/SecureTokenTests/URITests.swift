import Foundation
import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureToken

@Suite("RFC 7512 URIs")
struct URITests {
    @Test(
        "round-trips through the canonical form",
        arguments: [
            "pkcs11:token=wallet?module-name=softhsm2",
            "pkcs11:token=My%20Token;serial=1234;object=pay%3Bments;id=%01%02%FF;type=private?module-name=softhsm2",
            "pkcs11:manufacturer=SoftHSM%20project;model=SoftHSM%20v2?module-path=/usr/lib/ykcs11.so&pin-source=file:/run/pin",
            "pkcs11:",
            "pkcs11:object=a&b;type=public",
        ])
    func roundTrip(_ text: String) throws {
        let uri = try PKCS11URI(text)
        let again = try PKCS11URI(uri.description)
        #expect(again == uri)
        #expect(again.description == uri.description)
    }

    @Test func decodesPercentEscapesAndBinaryIDs() throws {
        let uri = try PKCS11URI("pkcs11:token=A%20B;id=%00%ff%10;object=x?pin-value=12%2634")
        #expect(uri.token == "A B")
        #expect(uri.id == [0x00, 0xff, 0x10])
        #expect(uri.pinValue == "12&34")
        #expect(uri.withoutPIN.pinValue == nil)
    }

    @Test(
        "malformed URIs name the bad part",
        arguments: [
            ("token=x", "must start with"),
            ("pkcs11:token", "without \"=\""),
            ("pkcs11:tokn=x", "unknown path attribute \"tokn\""),
            ("pkcs11:token=a;token=b", "repeats the attribute \"token\""),
            ("pkcs11:id=%zz", "bad percent-escape in \"id\""),
            ("pkcs11:id=%1", "bad percent-escape in \"id\""),
            ("pkcs11:token=a b", "character \" \" in \"token\""),
            ("pkcs11:type=secret", "type=secret"),
            ("pkcs11:slot-id=x", "slot-id that is not a number"),
            ("pkcs11:token=a?modul-name=x", "unknown query attribute \"modul-name\""),
            ("pkcs11:token=a?", "empty query"),
            ("pkcs11:?module-name=a&module-path=/b", "both module-name and module-path"),
            ("pkcs11:token=%FF%FE", "not UTF-8"),
        ])
    func malformed(_ text: String, _ expected: String) {
        do {
            _ = try PKCS11URI(text)
            Issue.record("accepted \(text)")
        } catch let error as TokenError {
            #expect(error.code == .invalidURI)
            #expect(error.message.contains(expected), "\(error.message)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func vendorAttributesAreAccepted() throws {
        let uri = try PKCS11URI("pkcs11:token=a;x-vendor=1?x-other=2")
        #expect(uri.token == "a")
    }

    @Test func slotIDAloneIsRefusedWhenPickingAToken() throws {
        let uri = try PKCS11URI("pkcs11:slot-id=0?module-name=softhsm2")
        #expect(throws: TokenError(.invalidURI, "")) { try TokenLibrary.shared.token(uri) }
    }
}

@Suite("PIN sources and PIN state")
struct PINSourceTests {
    /// Issue 13, case 4: secret buffers are left out of core dumps (MADV_DONTDUMP, "dd" in smaps) and reused
    /// after wiping; a PIN's bytes, a small key and a large secret all are.
    @Test func secretsAreInPagesThatCoreDumpsLeaveOut() throws {
        let pin = try PIN("123456")
        #expect(SecretArena.isExcludedFromDumps(pin.address))
        for count in [0, 32, 4096, 20_000] {
            let secret = SecretBytes(randomCount: count)
            secret.withUnsafeBytes { buffer in
                if let base = buffer.baseAddress { #expect(SecretArena.isExcludedFromDumps(base), "\(count) bytes") }
            }
        }
        // An ordinary heap allocation is not, so the check can fail.
        let plain = UnsafeMutableRawPointer.allocate(byteCount: 64, alignment: 16)
        defer { plain.deallocate() }
        #expect(!SecretArena.isExcludedFromDumps(plain))
    }

    @Test func parsesSpecs() throws {
        #expect(try PINSource(spec: "prompt") == .prompt)
        #expect(try PINSource(spec: "file:/a/b") == .file("/a/b"))
        #expect(try PINSource(spec: "env:PIN") == .environment("PIN"))
        #expect(try PINSource(spec: "fd:3") == .fileDescriptor(3))
        for bad in ["", "file:", "env:", "fd:x", "fd:-1", "pin:1234", "1234"] {
            #expect(throws: TokenError(.pinUnavailable, "")) { try PINSource(spec: bad) }
        }
    }

    @Test func uriPINSourceAcceptsPathsAndFileURIs() throws {
        #expect(try PINSource(uri: PKCS11URI("pkcs11:?pin-source=file:/x")) == .file("/x"))
        #expect(try PINSource(uri: PKCS11URI("pkcs11:?pin-source=file:///x")) == .file("/x"))
        #expect(try PINSource(uri: PKCS11URI("pkcs11:?pin-source=/x")) == .file("/x"))
        #expect(try PINSource(uri: PKCS11URI("pkcs11:?pin-value=1234")) == .value("1234"))
        #expect(try PINSource(uri: PKCS11URI("pkcs11:token=a")) == nil)
        #expect(throws: TokenError(.pinUnavailable, "")) {
            try PINSource(uri: PKCS11URI("pkcs11:?pin-source=|/bin/ask"))
        }
    }

    @Test func fileDropsOneTrailingNewline() throws {
        let path = TestTokens.layout.directory + "/pin-\(UInt32.random(in: 0...UInt32.max))"
        for (content, expected) in [
            ("1234\n", "1234"), ("1234\r\n", "1234"), ("1234", "1234"), ("12 34\nrest", "12 34"),
        ] {
            try content.write(toFile: path, atomically: true, encoding: .utf8)
            try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
            let pin = try PINSource.file(path).read()
            let text = try pin.withBytes { String(decoding: UnsafeBufferPointer(start: $0, count: $1), as: UTF8.self) }
            #expect(text == expected)
        }
        try "\n".write(toFile: path, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: path)
        #expect(throws: TokenError(.pinUnavailable, "")) { try PINSource.file(path).read() }
        // A PIN file others can read is refused, as ssh refuses such a private key (issue 13); a FIFO is not.
        try "1234\n".write(toFile: path, atomically: true, encoding: .utf8)
        for mode in [0o644, 0o640, 0o604, 0o660] {
            try FileManager.default.setAttributes([.posixPermissions: mode], ofItemAtPath: path)
            #expect(throws: TokenError(.pinUnavailable, "")) { try PINSource.file(path).read() }
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o400], ofItemAtPath: path)
        #expect(try PINSource.file(path).read().withBytes { $1 } == 4)
        #expect(throws: TokenError(.pinUnavailable, "")) { try PINSource.file(TestTokens.layout.directory).read() }
        // A FIFO others could write the PIN into (or read it from) is refused before waiting for a writer; the
        // caller's own 0600 FIFO is read.
        let open = path + "-open-fifo"
        #expect(mkfifo(open, 0o666) == 0)
        chmod(open, 0o666)
        #expect(throws: TokenError(.pinUnavailable, "")) { try PINSource.file(open).read() }
        unlink(open)
        let fifo = path + "-fifo"
        #expect(mkfifo(fifo, 0o600) == 0)
        let writer = Thread { try? "5678\n".write(toFile: fifo, atomically: false, encoding: .utf8) }
        writer.start()
        #expect(try PINSource.file(fifo).read().withBytes { $1 } == 4, "the caller's own FIFO is read")
        unlink(fifo)
        #expect(throws: TokenError(.pinUnavailable, "")) { try PINSource.file(path + "-missing").read() }
        #expect(throws: TokenError(.pinUnavailable, "")) {
            try PINSource.environment("SECURE_TEST_UNSET_VARIABLE").read()
        }
    }

    @Test func discardedPINCannotBeLent() throws {
        let pin = try PIN("123456")
        pin.discard()
        #expect(pin.isDiscarded)
        #expect(throws: TokenError(.pinUnavailable, "")) { try pin.withBytes { _, _ in () } }
    }

    @Test func pinStateFromFlags() throws {
        #expect(PINState(flags: TokenFlag.loginRequired | TokenFlag.userPINInitialized) == .ok)
        #expect(
            PINState(flags: TokenFlag.loginRequired | TokenFlag.userPINInitialized | TokenFlag.userPINCountLow)
                == .countLow)
        #expect(
            PINState(
                flags: TokenFlag.loginRequired | TokenFlag.userPINInitialized | TokenFlag.userPINCountLow
                    | TokenFlag.userPINFinalTry) == .finalTry)
        #expect(
            PINState(flags: TokenFlag.loginRequired | TokenFlag.userPINInitialized | TokenFlag.userPINLocked) == .locked
        )
        #expect(PINState(flags: TokenFlag.userPINInitialized) == .notRequired)
    }

    @Test func finalTryNeedsConfirmationAndLockedIsRefused() throws {
        #expect(throws: TokenError(.pinFinalTry, "")) {
            try PINState.finalTry.permitsLogin(confirmedFinalTry: false, tokenLabel: "t")
        }
        try PINState.finalTry.permitsLogin(confirmedFinalTry: true, tokenLabel: "t")
        #expect(throws: TokenError(.pinLocked, "")) {
            try PINState.locked.permitsLogin(confirmedFinalTry: true, tokenLabel: "t")
        }
        try PINState.countLow.permitsLogin(confirmedFinalTry: false, tokenLabel: "t")
    }

    @Test func aLockedPINSaysHowToUnblockThatKindOfToken() {
        #expect(
            UnblockAdvice.forToken(manufacturer: "Yubico (www.yubico.com)", model: "YubiKey YK5", moduleDescription: "")
                .contains("yubico-piv-tool -a unblock-pin"))
        #expect(
            UnblockAdvice.forToken(manufacturer: "piv_II", model: "PKCS#15 emulated", moduleDescription: "")
                .contains("PUK"))
        #expect(
            UnblockAdvice.forToken(manufacturer: "IBM", model: "SW   TPM", moduleDescription: "TPM2.0 Cryptoki")
                .contains("tpm2_dictionarylockout --clear-lockout"))
        #expect(
            UnblockAdvice.forToken(manufacturer: "SoftHSM project", model: "SoftHSM v2", moduleDescription: "")
                .contains("--login-type so"))
        do {
            try PINState.locked.permitsLogin(confirmedFinalTry: true, tokenLabel: "t", unblockAdvice: UnblockAdvice.piv)
            Issue.record("a locked PIN was let through")
        } catch let error as TokenError {
            #expect(error.code == .pinLocked && error.message.contains("yubico-piv-tool"))
        } catch {
            Issue.record("unexpected error \(error)")
        }
    }

    @Test func weakKeysAreRefusedWithWhatTheTokenReported() {
        let strong = PrivateKeyAttributes(
            sensitive: true, extractable: false, neverExtractable: true, alwaysSensitive: true,
            local: true, alwaysAuthenticate: true, sign: true, derive: false, decrypt: nil,
            unwrap: nil, signRecover: nil, isPrivate: true, token: true)
        #expect(throws: Never.self) {
            try TokenSession.refuseWeak(strong, usage: .sign, generatedHere: true, policy: .strict, what: "k")
        }
        var notLocal = strong
        notLocal.local = false
        // A key just generated that the token does not mark CKA_LOCAL (NSS softokn): only with the flag.
        #expect(throws: TokenError(.keyRefused, "")) {
            try TokenSession.refuseWeak(notLocal, usage: .sign, generatedHere: true, policy: .strict, what: "k")
        }
        #expect(throws: Never.self) {
            try TokenSession.refuseWeak(
                notLocal, usage: .sign, generatedHere: true,
                policy: TokenPolicy(allowUnprovenOrigin: true), what: "k")
        }
        // A selected key must be CKA_LOCAL whatever the policy: an imported key is never accepted.
        #expect(throws: TokenError(.keyRefused, "")) {
            try TokenSession.refuseWeak(
                notLocal, usage: .derive, generatedHere: false,
                policy: TokenPolicy(allowUnprovenOrigin: true), what: "k")
        }
        var notAlwaysAuthenticate = strong
        notAlwaysAuthenticate.alwaysAuthenticate = false
        #expect(throws: TokenError(.keyRefused, "")) {
            try TokenSession.refuseWeak(
                notAlwaysAuthenticate, usage: .sign, generatedHere: false, policy: .strict, what: "k")
        }
        var extractable = strong
        extractable.extractable = nil
        #expect(throws: TokenError(.keyRefused, "")) {
            try TokenSession.refuseWeak(extractable, usage: .derive, generatedHere: false, policy: .strict, what: "k")
        }
    }

    @Test func ecPointDecodingDecidesByLength() throws {
        let point: [UInt8] = Array(P256Fixture.point)
        #expect(try ECPoint.publicKey(fromAttribute: point).x963 == point)
        #expect(try ECPoint.publicKey(fromAttribute: [0x04, 0x41] + point).x963 == point)
        #expect(throws: TokenError(.keyRefused, "")) {
            try ECPoint.publicKey(fromAttribute: [0x04, 0x40] + point.dropLast())
        }
        var offCurve = point
        offCurve[64] ^= 1
        #expect(throws: (any Error).self) { try ECPoint.publicKey(fromAttribute: offCurve) }
    }
}

enum P256Fixture {
    /// The P-256 generator point, a valid public key.
    static let point: [UInt8] = Hex.decode(
        "046b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296"
            + "4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5")!
}
