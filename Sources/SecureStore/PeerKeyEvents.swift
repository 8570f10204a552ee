import SecureCore
import SecureCrypto

extension LedgerStore {
    /// Replaces a peer's stored key-event log (a longer log that the caller verified extends the old one).
    public func storePeerKeyEvents(wallet: WalletID, events: [SignedKeyEvent]) throws {
        try database.transaction {
            try database.prepare("DELETE FROM peer_key_events WHERE wallet = ?").bind([.blob(wallet.bytes)]).run()
            for event in events {
                try database.prepare("INSERT INTO peer_key_events (wallet, sequence, encoded) VALUES (?, ?, ?)")
                    .bind([.blob(wallet.bytes), .integer(Int64(event.event.sequence)), .blob(event.encoded)]).run()
            }
        }
    }

    /// A peer's stored key-event log, verified again as it is read; nil when none is stored.
    public func peerKeyEventLog(wallet: WalletID) throws -> KeyEventLog? {
        let statement = try database.prepare("SELECT encoded FROM peer_key_events WHERE wallet = ? ORDER BY sequence")
            .bind([.blob(wallet.bytes)])
        var events: [SignedKeyEvent] = []
        while try statement.step() {
            guard let event = try? SignedKeyEvent.decode(statement.blob(0)) else {
                throw StoreError(.corrupted, "a stored key event of peer \(wallet.hex) does not decode")
            }
            events.append(event)
        }
        guard !events.isEmpty else { return nil }
        do {
            return try KeyEventLog(verifying: events, walletID: wallet)
        } catch {
            throw StoreError(.corrupted, "the stored key-event log of peer \(wallet.hex) is broken: \(error)")
        }
    }
}
