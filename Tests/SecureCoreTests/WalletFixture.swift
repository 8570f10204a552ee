import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// The software wallet of SecureTestSupport, named as these tests always called it.
typealias TestWallet = SoftwareWallet

/// Every strict prefix of a valid encoding decodes to nil or throws; every extension throws; and the top
/// bit of every byte flipped is refused (a `FormatError`, or nil when a length grew past the end) or
/// decodes to another value: no two encodings give one value. `decode` must accept the full encoding.
func sweepEncoding<T: Equatable>(_ bytes: [UInt8], _ name: String, decode: ([UInt8]) throws -> T?) {
    let original = try? decode(bytes)
    #expect(original != nil, "\(name): the full encoding decodes")
    for length in 0..<bytes.count {
        let result = Result { try decode(Array(bytes.prefix(length))) }
        if case .success(let value) = result, value != nil {
            Issue.record("\(name): the \(length)-byte prefix decoded")
        }
    }
    #expect(throws: FormatError.self, "\(name): an extension is refused") { _ = try decode(bytes + [0]) }
    for index in bytes.indices {
        var flipped = bytes
        flipped[index] ^= 0x80
        do {
            let decoded = try decode(flipped)
            #expect(decoded == nil || decoded != original, "\(name): a flip at byte \(index) decoded to the same value")
        } catch {
            #expect(error is FormatError, "\(name): a flip at byte \(index) threw \(error)")
        }
    }
}

extension SoftwareWallet {
    /// The issuers of every asset this wallet has held: the ones its payees trust in these tests.
    var issuers: Set<WalletID> { Set(state.balances.keys.map(\.issuer)) }

    /// Mints `units` euro cents to this wallet and deposits them.
    mutating func deposit(_ units: Int64, issuer: SoftwareSigner) throws {
        try deposit(Fixture.eur(units), issuer: issuer)
    }

    /// The order for paying `units` euro cents to `payee`.
    mutating func order(to payee: WalletID, units: Int64, proximity: Proximity = .none, binding: [UInt8] = [])
        throws -> TransferOrder
    {
        try order(to: payee, amount: Fixture.eur(units), proximity: proximity, binding: binding)
    }

    /// Pays `units` euro cents to `payee`.
    mutating func pay(_ payee: WalletID, units: Int64, proximity: Proximity = .none, binding: [UInt8] = [])
        throws -> SignedTransfer
    {
        try pay(payee, amount: Fixture.eur(units), proximity: proximity, binding: binding)
    }
}
