internal import CLibCrypto
import Foundation

// The X.509 certificates of a PIV attestation chain, parsed and checked by OpenSSL. Only what a chain
// walk needs is exposed: names (as DER, compared bytewise), one signature check against a named issuer,
// the validity window, the public key and an extension's bytes. The walk itself is SecureToken's
// (PIVAttestation.swift), written link by link as the Python oracle does, because a YubiKey's F9
// certificate need not carry the basicConstraints that OpenSSL's path builder wants of an issuer.

/// One X.509 certificate, parsed by OpenSSL; the handle is freed with the object.
public final class X509Certificate: @unchecked Sendable {
    private let pointer: OpaquePointer
    /// The certificate's DER encoding, exactly as given.
    public let der: [UInt8]

    /// The largest certificate accepted: attestation certificates are under 1 KiB; 16 KiB leaves room for
    /// any intermediate while bounding what a file or token can make us parse.
    public static let encodedByteCountMax = 16 * 1024

    /// Parses one DER certificate; trailing bytes are refused.
    public init(der: [UInt8]) throws {
        guard !der.isEmpty, der.count <= Self.encodedByteCountMax else {
            throw CryptoError(
                .invalidLength, "a certificate of \(der.count) bytes is outside 1…\(Self.encodedByteCountMax)")
        }
        var consumed = 0
        let parsed: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor: UnsafePointer<UInt8>? = buffer.baseAddress
            let result = d2i_X509(nil, &cursor, buffer.count)
            if let cursor, let base = buffer.baseAddress { consumed = base.distance(to: cursor) }
            return result
        }
        guard let parsed else { throw CryptoError.openSSL("the certificate is not DER X.509", code: .invalidEncoding) }
        guard consumed == der.count else {
            X509_free(parsed)
            throw CryptoError(.invalidEncoding, "the certificate has \(der.count - consumed) bytes after its end")
        }
        pointer = parsed
        self.der = der
    }

    deinit { X509_free(pointer) }

    /// Every CERTIFICATE block of a PEM text, in order (other blocks are skipped). At most `countMax`.
    public static func certificates(pem text: String, countMax: Int = 16) throws -> [X509Certificate] {
        var certificates: [X509Certificate] = []
        var rest = Substring(text)
        let begin = "-----BEGIN CERTIFICATE-----", end = "-----END CERTIFICATE-----"
        while let start = rest.range(of: begin) {
            guard let stop = rest.range(of: end, range: start.upperBound..<rest.endIndex) else {
                throw CryptoError(.invalidEncoding, "a PEM certificate block has no end line")
            }
            guard certificates.count < countMax else {
                throw CryptoError(.invalidLength, "more than \(countMax) certificates in one PEM text")
            }
            let body = rest[start.upperBound..<stop.lowerBound].filter { !$0.isWhitespace }
            guard let der = Base64.decode(String(body)) else {
                throw CryptoError(.invalidEncoding, "a PEM certificate block is not valid base64")
            }
            certificates.append(try X509Certificate(der: der))
            rest = rest[stop.upperBound...]
        }
        return certificates
    }

    /// The PEM form.
    public var pem: String { PEM.encode(der, label: "CERTIFICATE") }

    /// SHA-256 of the DER encoding.
    public var fingerprint: [UInt8] { SHA256.hash(der) }

    /// The subject name's DER encoding (names are compared bytewise, as the chain's issuers write them).
    public var subjectDER: [UInt8] { Self.nameDER(X509_get_subject_name(pointer)) }
    /// The issuer name's DER encoding.
    public var issuerDER: [UInt8] { Self.nameDER(X509_get_issuer_name(pointer)) }

    /// The subject as one line of text, for messages.
    public var subject: String {
        guard let name = X509_get_subject_name(pointer) else { return "?" }
        var buffer = [CChar](repeating: 0, count: 256)
        X509_NAME_oneline(name, &buffer, Int32(buffer.count))
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func nameDER(_ name: OpaquePointer?) -> [UInt8] {
        guard let name else { return [] }
        var output: UnsafeMutablePointer<UInt8>?
        let count = i2d_X509_NAME(name, &output)
        guard count > 0, let output else { return [] }
        defer { CRYPTO_free(output, nil, 0) }
        return Array(UnsafeBufferPointer(start: output, count: Int(count)))
    }

    /// The SubjectPublicKeyInfo's DER encoding.
    public var publicKeySPKI: [UInt8] {
        guard let key = X509_get0_pubkey(pointer) else { return [] }
        var output: UnsafeMutablePointer<UInt8>?
        let count = i2d_PUBKEY(key, &output)
        guard count > 0, let output else { return [] }
        defer { CRYPTO_free(output, nil, 0) }
        return Array(UnsafeBufferPointer(start: output, count: Int(count)))
    }

    /// Whether this certificate names `issuer` as its issuer and carries a signature by `issuer`'s key.
    public func isIssued(by issuer: X509Certificate) -> Bool {
        guard issuerDER == issuer.subjectDER, let key = X509_get0_pubkey(issuer.pointer) else { return false }
        let verified = X509_verify(pointer, key) == 1
        ERR_clear_error()
        return verified
    }

    /// Whether `date` lies within the validity window (notBefore ≤ date ≤ notAfter).
    public func isValid(at date: Date) -> Bool {
        var time = time_t(date.timeIntervalSince1970)
        guard let notBefore = X509_get0_notBefore(pointer), let notAfter = X509_get0_notAfter(pointer) else {
            return false
        }
        return X509_cmp_time(notBefore, &time) < 0 && X509_cmp_time(notAfter, &time) > 0
    }

    /// The contents (the OCTET STRING's bytes) of the extension with this dotted OID, or nil when absent.
    public func extensionValue(oid: String) -> [UInt8]? {
        guard let object = OBJ_txt2obj(oid, 1) else { return nil }
        defer { ASN1_OBJECT_free(object) }
        let index = X509_get_ext_by_OBJ(pointer, object, -1)
        guard index >= 0, let ext = X509_get_ext(pointer, index), let data = X509_EXTENSION_get_data(ext) else {
            return nil
        }
        let count = Int(ASN1_STRING_length(data))
        guard count > 0, let bytes = ASN1_STRING_get0_data(data) else { return [] }
        return Array(UnsafeBufferPointer(start: bytes, count: count))
    }
}

extension X509Certificate {
    /// Whether the certificate may issue others: basicConstraints CA, or OpenSSL's allowances for
    /// version 1 roots and keyCertSign key usage (X509_check_ca).
    public var isCA: Bool { X509_check_ca(pointer) != 0 }
}

/// The pin of a TLS key: SHA-256 of its DER SubjectPublicKeyInfo, as a clearing delegation records it and as
/// libcurl's CURLOPT_PINNEDPUBLICKEY checks it (docs/CLEARING.md §1.3).
public enum TLSKeyPin {
    /// A key or certificate file is a few KiB; 64 KiB bounds what a file can make us parse.
    public static let fileByteCountMax = 64 * 1024

    /// The DER SubjectPublicKeyInfo of the key a PEM text holds: its first PUBLIC KEY, PRIVATE KEY, EC PRIVATE
    /// KEY, RSA PRIVATE KEY or CERTIFICATE block (a certificate gives its subject's key). An encrypted private
    /// key is refused: give the public key or the certificate instead.
    public static func subjectPublicKeyInfo(pem text: String) throws -> [UInt8] {
        guard text.utf8.count <= fileByteCountMax else {
            throw CryptoError(.invalidLength, "a key file of \(text.utf8.count) bytes is over \(fileByteCountMax)")
        }
        if text.contains("-----BEGIN ENCRYPTED PRIVATE KEY-----") {
            throw CryptoError(
                .invalidEncoding, "the private key is encrypted; give its public key or certificate instead")
        }
        // The first block wins, whatever its label, so a file holding a key and its certificate pins the key.
        let labels = ["PUBLIC KEY", "PRIVATE KEY", "EC PRIVATE KEY", "RSA PRIVATE KEY", "CERTIFICATE"]
        let found = labels.compactMap { label in
            text.range(of: "-----BEGIN \(label)-----").map { (label: label, at: $0.lowerBound) }
        }.min { $0.at < $1.at }
        guard let found else {
            throw CryptoError(
                .invalidEncoding, "no PEM public key, private key or certificate (a -----BEGIN … ----- block)")
        }
        let der = try PEM.decode(text, label: found.label)
        switch found.label {
        case "CERTIFICATE": return try X509Certificate(der: der).publicKeySPKI
        case "PUBLIC KEY": return try KeyFileDER.subjectPublicKeyInfo(der: der, isPrivate: false)
        default: return try KeyFileDER.subjectPublicKeyInfo(der: der, isPrivate: true)
        }
    }

    /// SHA-256 of `subjectPublicKeyInfo(pem:)`.
    public static func digest(pem text: String) throws -> [UInt8] { SHA256.hash(try subjectPublicKeyInfo(pem: text)) }
}
