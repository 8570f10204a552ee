import SecureCrypto
import Testing

/// The TLS key pin of a clearing delegation: SHA-256 of the DER SubjectPublicKeyInfo, the same whichever PEM form
/// of the key is given. The key is a throwaway made for this test with OpenSSL 3 (`openssl genpkey`, `pkey
/// -pubout`, `ec`, `req -x509`); the expected digest is `openssl pkey -pubout -outform DER | sha256sum`.
@Suite struct TLSKeyPinTests {
    static let expected = "fbb1310f1b5d38f6aa6b0c024d2b8180c07a67b8adb931e794fa59d6fa321377"

    @Test func everyFormOfTheKeyGivesOnePin() throws {
        for (name, pem) in [
            ("PKCS#8 private key", Self.pkcs8), ("public key", Self.publicKey), ("EC private key", Self.traditional),
            ("certificate", Self.certificate), ("key then certificate", Self.pkcs8 + "\n" + Self.certificate),
        ] {
            #expect(Hex.encode(try TLSKeyPin.digest(pem: pem)) == Self.expected, "\(name)")
        }
        #expect(try TLSKeyPin.subjectPublicKeyInfo(pem: Self.publicKey).count == 91)
    }

    @Test func refusals() throws {
        let encrypted = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nAAAA\n-----END ENCRYPTED PRIVATE KEY-----\n"
        for (name, pem) in [
            ("no block", "just text"), ("encrypted", encrypted),
            ("bad base64", "-----BEGIN PUBLIC KEY-----\n!!!\n-----END PUBLIC KEY-----\n"),
            ("not a key", "-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"),
            ("truncated", String(Self.publicKey.prefix(60)) + "\n-----END PUBLIC KEY-----\n"),
            ("too long", String(repeating: " ", count: TLSKeyPin.fileByteCountMax + 1)),
        ] {
            #expect(throws: CryptoError.self, "\(name)") { _ = try TLSKeyPin.digest(pem: pem) }
        }
    }

    static let pkcs8 = """
        -----BEGIN PRIVATE KEY-----
        MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgLXpQXVXOGfYI6OyM
        yrIYaPnMOFMfLfOPk9jn+pzTt0yhRANCAASTVgIe2BPlE61Mc3c+pMfJUA8b62w1
        uM956GpziVQcXrlQziGVGEUluhYHf5Y27pBNmEiKhR46U1Sk3OmtVcUz
        -----END PRIVATE KEY-----
        """

    static let publicKey = """
        -----BEGIN PUBLIC KEY-----
        MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEk1YCHtgT5ROtTHN3PqTHyVAPG+ts
        NbjPeehqc4lUHF65UM4hlRhFJboWB3+WNu6QTZhIioUeOlNUpNzprVXFMw==
        -----END PUBLIC KEY-----
        """

    static let traditional = """
        -----BEGIN EC PRIVATE KEY-----
        MHcCAQEEIC16UF1Vzhn2COjsjMqyGGj5zDhTHy3zj5PY5/qc07dMoAoGCCqGSM49
        AwEHoUQDQgAEk1YCHtgT5ROtTHN3PqTHyVAPG+tsNbjPeehqc4lUHF65UM4hlRhF
        JboWB3+WNu6QTZhIioUeOlNUpNzprVXFMw==
        -----END EC PRIVATE KEY-----
        """

    static let certificate = """
        -----BEGIN CERTIFICATE-----
        MIIBcTCCARegAwIBAgIUMxmJpaKF9wUJST9oLm8Kp1pPIDkwCgYIKoZIzj0EAwIw
        DjEMMAoGA1UEAwwDcGluMB4XDTI2MTIwMjA4MDEzOFoXDTM2MTEyOTA4MDEzOFow
        DjEMMAoGA1UEAwwDcGluMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEk1YCHtgT
        5ROtTHN3PqTHyVAPG+tsNbjPeehqc4lUHF65UM4hlRhFJboWB3+WNu6QTZhIioUe
        OlNUpNzprVXFM6NTMFEwHQYDVR0OBBYEFI+XfUm+BrHTAXPKh6AJDeSaTkoSMB8G
        A1UdIwQYMBaAFI+XfUm+BrHTAXPKh6AJDeSaTkoSMA8GA1UdEwEB/wQFMAMBAf8w
        CgYIKoZIzj0EAwIDSAAwRQIgStGLjG87KWb5HMwshNnIPj76gW5Yxrbl/E3oeXp6
        Y7oCIQC6FAXNYW80aup4P/TL5790B2h/Ee4QdKjwjduLSom6ZA==
        -----END CERTIFICATE-----
        """
}
