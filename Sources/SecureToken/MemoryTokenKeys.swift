import SecureCrypto

/// A signing key held in process memory by a token stand-in: the simulator's test-only `SoftwareSigner`,
/// or production's `RehearsalKey`, which signs only inside a rehearsal.
public protocol MemorySigningKey: AnyObject {
    /// The public half.
    var publicKey: P256.PublicKey { get }
    /// A low-s signature over a 32-byte digest, verified against the public key.
    func sign(digest: [UInt8]) throws -> ECDSASignature
}

extension RehearsalKey: MemorySigningKey {}

/// What a token keeps when its keys live in process memory instead of on a device: the keys, by id, and the
/// private data objects (the anchor). The simulator's `SimulatedToken` and the rehearsal's `RehearsalToken`
/// share it and add their own login and fault rules around it; it checks no login itself.
public final class MemoryTokenKeys {
    private enum Material {
        case signing(MemorySigningKey)
        case agreement(P256.KeyAgreementPrivateKey)
    }

    /// The token's label, which key ids are derived from.
    public let label: String
    /// The token's URI (its label only).
    public let uri: PKCS11URI
    /// The private data objects: (application, label, value).
    public var objects: [(application: String, label: String, value: [UInt8])] = []
    private let makeSigningKey: () throws -> MemorySigningKey
    private var material: [[UInt8]: Material] = [:]
    /// The keys in the order they were made.
    public private(set) var keys: [TokenKey] = []

    /// An empty token named `label`, whose signing keys `makeSigningKey` makes.
    public init(label: String, makeSigningKey: @escaping () throws -> MemorySigningKey) {
        self.label = label
        var uri = PKCS11URI()
        uri.token = label
        self.uri = uri
        self.makeSigningKey = makeSigningKey
    }

    /// Makes a key; its id is derived from the token's label, the key's label and the count of keys so far.
    public func generateKey(label keyLabel: String, usage: KeyUsage) throws -> TokenKey {
        let id = Array(SHA256.hash(Array((label + "/" + keyLabel + "/\(keys.count)").utf8)).prefix(16))
        let made: Material
        let publicKey: P256.PublicKey
        switch usage {
        case .sign:
            let signer = try makeSigningKey()
            made = .signing(signer)
            publicKey = signer.publicKey
        case .derive:
            let agreement = P256.KeyAgreementPrivateKey.generate()
            made = .agreement(agreement)
            publicKey = agreement.publicKey
        case .decrypt:
            throw TokenError(.unsupported, "the in-memory token \"\(label)\" has no RSA keys")
        }
        var keyURI = uri
        keyURI.id = id
        keyURI.object = keyLabel
        let key = TokenKey(id: id, label: keyLabel, publicKey: publicKey, uri: keyURI)
        material[id] = made
        keys.append(key)
        return key
    }

    /// The one key a URI names (by id and/or label).
    public func key(_ wanted: PKCS11URI) throws -> TokenKey {
        let matches = keys.filter { key in
            (wanted.id.map { $0 == key.id } ?? true) && (wanted.object.map { $0 == key.label } ?? true)
        }
        guard matches.count == 1 else {
            throw TokenError(
                matches.isEmpty ? .keyNotFound : .ambiguous, "no single key on \"\(label)\" matches \(wanted)")
        }
        return matches[0]
    }

    /// ECDH with a key-agreement key.
    public func deriveSharedSecret(key: TokenKey, peer: P256.PublicKey) throws -> [UInt8] {
        guard case .agreement(let agreement)? = material[key.id] else {
            throw TokenError(
                .keyRefused, "the key \(key.label) cannot derive", returnValueName: "CKR_KEY_TYPE_INCONSISTENT")
        }
        return try agreement.sharedSecret(with: peer).copyBytes()
    }

    /// A signature with a signing key.
    public func sign(digest: [UInt8], key: TokenKey) throws -> ECDSASignature {
        guard case .signing(let signer)? = material[key.id] else {
            throw TokenError(
                .keyRefused, "the key \(key.label) cannot sign", returnValueName: "CKR_KEY_TYPE_INCONSISTENT")
        }
        return try signer.sign(digest: digest)
    }

    /// The data objects of one application.
    public func dataObjects(application: String) -> [(label: String, value: [UInt8])] {
        objects.filter { $0.application == application }.map { ($0.label, $0.value) }
    }

    /// Replaces (or adds) one data object.
    public func replaceDataObject(application: String, label objectLabel: String, value: [UInt8]) {
        objects.removeAll { $0.application == application && $0.label == objectLabel }
        objects.append((application, objectLabel, value))
    }

    /// Removes the data objects with this application and label.
    public func destroyDataObjects(application: String, label objectLabel: String) {
        objects.removeAll { $0.application == application && $0.label == objectLabel }
    }

    /// Whether `pin` holds exactly `expected` (a stand-in's fixed PIN). The comparison runs over the PIN's
    /// own wiped storage; a discarded PIN matches nothing.
    public static func pin(_ pin: PIN, is expected: String) -> Bool {
        let wanted = Array(expected.utf8)
        // Compared in place, with no early exit: a person may type a real PIN at a rehearsal's prompt, so no
        // copy of it is made.
        return
            (try? pin.withBytes { bytes, count in
                guard count == wanted.count else { return false }
                var difference: UInt8 = 0
                for index in 0..<count { difference |= bytes[index] ^ wanted[index] }
                return difference == 0
            }) ?? false
    }
}
