import SecureCrypto
import SecureTestSupport
import Testing

@testable import SecureCore

/// Envelopes and wallet cards: what transfer, receipt and refusal files and cards carry, and that a log
/// always belongs to the wallet it speaks for.
@Suite("Envelopes and wallet cards")
struct EnvelopeTests {
    @Test func framingVector() throws {
        let wallet = try TestWallet(seed: 1)
        let envelope = Envelope(kind: .transfer, statement: [0xAA, 0xBB, 0xCC], signerLog: wallet.log)
        let encoded = envelope.encoded
        #expect(Array(encoded.prefix(11)) == [0x01, 0x01, 0, 0, 0, 3, 0xAA, 0xBB, 0xCC, 0x00, 0x01])
        #expect(try Envelope.decode(encoded) == envelope)
        let card = WalletCard(log: wallet.log).encoded
        #expect(Array(card.prefix(33)) == [0x02] + wallet.walletID.bytes)
        #expect(
            Array(card.dropFirst(33)) == Array(encoded.dropFirst(9).dropLast()),
            "the card and the envelope encode a log alike")
        #expect(encoded.last == 0, "no consistency claim")
    }

    @Test func aTransferEnvelopeRoundTripsAndEveryPrefixAndFlipIsRefused() throws {
        var payer = try TestWallet(seed: 2)
        try payer.deposit(500, issuer: try SoftwareSigner())
        let payee = try TestWallet(seed: 3)
        let transfer = try payer.pay(payee.walletID, units: 100)
        let envelope = Envelope(transfer, payerLog: payer.log)
        let (opened, log) = try envelope.transfer()
        #expect(opened == transfer && log == payer.log)
        sweepEncoding(envelope.encoded, "transfer envelope", decode: Envelope.decode)
        // The wrong kind, and a log of another wallet than the signer's, are refused before anything else.
        #expect(throws: FormatError.self) { try envelope.receipt() }
        #expect(throws: KeyEventError.self) { try Envelope(transfer, payerLog: payee.log).transfer() }
        let refusal = try payee.refusal(of: transfer, reason: .debitMismatch)
        #expect(throws: KeyEventError.self) { try Envelope(refusal, payeeLog: payer.log).refusal() }
        #expect(try Envelope(refusal, payeeLog: payee.log).refusal().0 == refusal)
    }

    @Test func aCardIsItsLogAndACardOfVersionOneIsRefused() throws {
        let wallet = try TestWallet(seed: 4)
        let card = WalletCard(log: wallet.log)
        #expect(try WalletCard.parse(card.text) == card)
        #expect(card.text.hasPrefix("Wallet-ID: \(wallet.walletID.hex)\n"))
        sweepEncoding(card.encoded, "wallet card", decode: { try WalletCard.decode($0) })
        let versionOne = "Wallet-ID: \(wallet.walletID.hex)\n" + wallet.key.pem
        #expect(throws: FormatError(.unsupportedVersion, "")) { try WalletCard.parse(versionOne) }
        // A card that names one wallet and carries another's log is refused.
        let other = try TestWallet(seed: 5)
        var forged = [UInt8(2)] + other.walletID.bytes
        forged += Array(card.encoded.dropFirst(33))
        #expect(throws: FormatError.self) { try WalletCard.decode(forged) }
    }
}
