import SecureCore
import SecureCrypto
import SecureStore

/// What one sync of a wallet sends to its issuer's clearing (docs/CLEARING.md §2.2, §2.7): the chunks of its
/// entries from the clearing's base s₀ to its size s₁, and the close request (signed claim, checkpoint of size
/// s₁, consistency proof from s₀, opaque map).
public struct WalletSyncUpload: Sendable {
    /// The issuer whose clearing this is for.
    public let issuer: WalletID
    /// s₀: the size the clearing cosigned last (0 on a first sync).
    public let base: UInt64
    /// The entries s₀ … s₁−1 in chunks; one empty chunk when there is nothing new (it carries the session).
    public let chunks: [SyncChunk]
    /// The close request.
    public let close: SyncClose
    /// How many of the entries go whole, and how many opaque.
    public let wholeCount: Int
    public let opaqueCount: Int

    /// s₁: the size of the checkpoint sent.
    public var size: UInt64 { close.checkpoint.checkpoint.size }
}

/// What a wallet took from a clearing's answer (docs/CLEARING.md §2.7, §2.9).
public struct ClearingSyncResult: Sendable {
    /// The size of this wallet's checkpoint the clearing cosigned.
    public let cosignedSize: UInt64
    /// The cosignature's batch number.
    public let batch: UInt64
    /// The list version this wallet holds now.
    public let listVersion: UInt64
    /// Why the answer's list increments were not applied (the list stays as it was), or nil when they were.
    public let listRefusal: ListFollowRefusal?
    /// The listings in force that name this wallet or a wallet named by one of its entries.
    public let concerning: [Listing]
}

extension Wallet {
    /// The issuer a sync is for: `named` (an issuer's wallet syncs only to its own clearing; another wallet
    /// only to one it trusts), or when nil the issuer's own, or the only trusted issuer.
    public func clearingIssuer(_ named: WalletID?) throws -> WalletID {
        if isIssuer {
            guard named == nil || named == walletID else {
                throw WalletError(.invalidInput, "an issuer's wallet syncs only with its own clearing")
            }
            return walletID
        }
        let trusted = try trustedIssuers()
        if let named {
            guard trusted.contains(named) else {
                throw WalletError(
                    .invalidInput, "this wallet does not trust issuer \(named.hex) (`secure issuer trust`)")
            }
            return named
        }
        guard trusted.count == 1, let only = trusted.first else {
            throw WalletError(
                .invalidInput,
                trusted.isEmpty
                    ? "this wallet trusts no issuer, so it has no clearing to sync with"
                    : "this wallet trusts \(trusted.count) issuers: name one with --issuer")
        }
        return only
    }

    /// The key-event log of `issuer` as this wallet follows it (its own when it is the issuer).
    public func clearingIssuerLog(_ issuer: WalletID) throws -> KeyEventLog {
        if issuer == walletID { return keyLog }
        guard let log = try peerKeyLog(of: issuer) else {
            throw WalletError(.notFound, "this wallet holds no key-event log of issuer \(issuer.hex)")
        }
        return log
    }

    /// The clearing `issuer`'s log names (its delegation in force).
    public func clearingDelegation(issuer: WalletID) throws -> ClearingDelegation {
        guard let delegation = try clearingIssuerLog(issuer).clearingInForce else {
            throw WalletError(
                .notFound,
                "issuer \(issuer.hex) has named no clearing in the key-event log this wallet holds (the issuer runs "
                    + "`secure issuer delegate-clearing`; this wallet then trusts its new card again)")
        }
        return delegation
    }

    /// Builds what a sync to `issuer`'s clearing sends, from the clearing's base `base` (its cosigned size of
    /// this wallet) to the latest checkpoint. Signs the claim once (one PIN); the checkpoint is the one the last
    /// append signed. Throws when the clearing holds more entries than this wallet (a wallet restored from an
    /// older copy), or a payment out lacks its signed transfer.
    public func syncUpload(
        issuer: WalletID, base: UInt64, chunkEntryCountMax: Int = ClearingLimits.syncChunkEntryCountMax
    ) throws -> WalletSyncUpload {
        guard let latest else { throw WalletError(.notFound, "the wallet has no checkpoint yet") }
        let size = latest.checkpoint.size
        guard base <= size else {
            throw WalletError(
                .refused,
                "the clearing holds \(base) entries of this wallet, more than its \(size): this copy of the wallet is "
                    + "older than one that synced (restored from a backup?); it cannot sync")
        }
        guard chunkEntryCountMax >= 1, chunkEntryCountMax <= ClearingLimits.syncChunkEntryCountMax else {
            throw WalletError(
                .invalidInput, "a chunk holds 1 … \(ClearingLimits.syncChunkEntryCountMax) entries")
        }
        // The forms are computed over the whole ledger: a confirmation goes opaque with its payment out, which
        // may lie before the base.
        var ledgerEntries: [LedgerEntry] = []
        try ledger.forEachEntry(from: 0, to: size) { ledgerEntries.append($0) }
        let made = try SyncEntry.make(ledgerEntries, issuer: issuer) { id in
            guard let row = try? ledger.outgoing(transferID: id) else { return nil }
            return (try? SignedTransfer.decode(row.signed)) ?? nil
        }
        let entries = Array(made.entries.dropFirst(Int(base)))
        let map = OpaqueMap(items: made.map.items.filter { $0.position >= base })
        let session = SyncSessionID.random()
        let keyEvents = base == 0 ? keyLog.events : keyLog.events.filter { $0.event.ledgerPosition >= base }
        var chunks = SyncChunk.chunks(
            walletID: walletID, session: session, entries: entries, keyEvents: keyEvents,
            peerLogs: try counterpartyLogs(entries, issuer: issuer), entryCountMax: chunkEntryCountMax)
        if chunks.isEmpty {
            chunks = [
                SyncChunk(
                    walletID: walletID, session: session, firstPosition: base, keyEvents: keyEvents, peerLogs: [],
                    entries: [])
            ]
        }
        let claim = try SyncClaim(
            walletID: walletID, walletKey: latest.checkpoint.walletKey, keyDate: KeyDate(checkpoint: latest.checkpoint),
            issuer: issuer, fromSize: base, toSize: size, opaqueMapDigest: map.digest, session: session
        ).sign(with: try signer)
        let proof = base == 0 || base == size ? [] : try ledger.consistencyProof(oldSize: base, newSize: size)
        return WalletSyncUpload(
            issuer: issuer, base: base, chunks: chunks,
            close: SyncClose(claim: claim, checkpoint: latest, consistencyProof: proof, opaqueMap: map),
            wholeCount: entries.count - map.items.count, opaqueCount: map.items.count)
    }

    /// The logs of the counterparties that whole entries name, as this wallet follows them.
    private func counterpartyLogs(_ entries: [SyncEntry], issuer: WalletID) throws -> [WalletID: KeyEventLog] {
        var logs: [WalletID: KeyEventLog] = [:]
        for case .whole(let entry, _) in entries {
            guard let peer = WalletID(bytes: entry.counterparty), peer != walletID, logs[peer] == nil else { continue }
            if peer == issuer, issuer != walletID {
                logs[peer] = try clearingIssuerLog(issuer)
            } else if let log = try peerKeyLog(of: peer) {
                logs[peer] = log
            }
        }
        return logs
    }

    /// The admission request of a first sync to `issuer`'s clearing (docs/CLEARING.md §3.4): the first deposit
    /// of `issuer`'s voucher or the first payment in of its asset, proven under the latest checkpoint. An
    /// issuer's wallet sends its inception.
    public func admissionRequest(issuer: WalletID) throws -> AdmissionRequest {
        guard let latest else { throw WalletError(.notFound, "the wallet has no checkpoint yet") }
        let size = latest.checkpoint.size
        var found: LedgerEntry?
        if issuer == walletID {
            found = try ledger.entry(at: 0)
        } else {
            try ledger.forEachEntry(from: 0, to: size) { entry in
                guard found == nil, [.deposit, .paymentIn].contains(entry.kind), entry.amount?.issuer == issuer
                else { return }
                found = entry
            }
        }
        guard let entry = found else {
            throw WalletError(
                .refused,
                "this wallet has neither deposited a voucher of issuer \(issuer.hex) nor been paid its money, so its "
                    + "clearing cannot admit it yet")
        }
        return AdmissionRequest(
            log: keyLog, checkpoint: latest, entry: entry,
            proof: try ledger.inclusionProof(index: entry.position, size: size))
    }

    /// Applies a clearing's answer to `upload`: checks the cosignature of the checkpoint sent under the clearing
    /// key of `issuer`'s delegation in force, keeps it, and applies the list increments when they chain to the
    /// signed head. A bad cosignature throws and nothing is kept; increments that do not apply leave the list as
    /// it was and are reported (`listRefusal`), the cosignature is still kept.
    public func applySyncAnswer(_ answer: SyncAnswer, for upload: WalletSyncUpload) throws -> ClearingSyncResult {
        let issuer = upload.issuer
        let clearing = try clearingDelegation(issuer: issuer)
        if let problem = answer.cosignature.problem(
            clearingKey: clearing.clearingKey, issuer: issuer, checkpoint: upload.close.checkpoint.checkpoint)
        {
            throw WalletError(
                .refused, "the clearing's cosignature does not hold (\(problem)); nothing of its answer was kept")
        }
        var list = try clearingList(issuer: issuer)
        let fromVersion = list.head.version + 1
        var increments = answer.increments
        if answer.fromVersion < fromVersion {
            // The clearing sent versions this wallet already holds: only the rest is new.
            increments = Array(
                increments.dropFirst(Int(min(fromVersion - answer.fromVersion, UInt64(increments.count)))))
        }
        var refusal: ListFollowRefusal?
        if answer.fromVersion > fromVersion {
            refusal = .gap
        } else {
            refusal = list.apply(increments, signedHead: answer.cosignature.head, clearingKey: clearing.clearingKey)
        }
        let applied = refusal == nil ? increments : []
        // A refused list keeps the head it was last checked against (the new cosignature's head, when none).
        let listHead =
            refusal == nil ? answer.cosignature.head.encoded : try ledger.clearingCosignature(issuer: issuer)?.listHead
        try ledger.storeClearingAnswer(
            issuer: issuer, cosignature: answer.cosignature.encoded,
            listHead: listHead ?? answer.cosignature.head.encoded, increments: applied.map(\.encoded),
            fromVersion: fromVersion)
        return ClearingSyncResult(
            cosignedSize: answer.cosignature.leaf.size, batch: answer.cosignature.head.head.batch,
            listVersion: list.head.version, listRefusal: refusal, concerning: try concerningListings(list))
    }

    /// `issuer`'s clearing list as this wallet holds it, checked again as it is read: the kept increments must
    /// chain to the list head of the kept cosignature's signed tree head (a list newer than the cosignature's
    /// head is refused as damaged).
    public func clearingList(issuer: WalletID) throws -> ClearingListFollower {
        var list = ClearingListFollower(issuer: issuer)
        let encoded = try ledger.clearingListIncrements(issuer: issuer)
        guard !encoded.isEmpty else { return list }
        guard let kept = try ledger.clearingCosignature(issuer: issuer),
            let head = (try? SignedClearingTreeHead.decode(kept.listHead)) ?? nil
        else {
            throw WalletError(.verificationFailed, "the clearing list of issuer \(issuer.hex) has no signed head")
        }
        let increments = try encoded.map { bytes -> ListIncrement in
            guard let increment = try? ListIncrement.decode(bytes) else {
                throw WalletError(.verificationFailed, "a kept clearing list increment does not decode")
            }
            return increment
        }
        let clearing = try clearingDelegation(issuer: issuer)
        if let refusal = list.apply(increments, signedHead: head, clearingKey: clearing.clearingKey) {
            throw WalletError(
                .verificationFailed,
                "the kept clearing list of issuer \(issuer.hex) does not check against its signed head (\(refusal))")
        }
        return list
    }

    /// The proven listing of `wallet` in the list of any issuer this wallet syncs with, if one is in force: the
    /// evidence digest it names is checkable with `secure evidence fetch` and `secure evidence verify`.
    public func provenListing(of wallet: WalletID) throws -> Listing? {
        for issuer in try clearingIssuers() {
            let list = try clearingList(issuer: issuer)
            if let digest = list.listings[wallet]?[.proven] {
                return Listing(wallet: wallet, grounds: .proven, digest: digest)
            }
        }
        return nil
    }

    /// The listings other than proven (unsynced, inconsistent…) of `wallet`: warnings, never refusals.
    public func otherListings(of wallet: WalletID) throws -> [Listing] {
        var found: [Listing] = []
        for issuer in try clearingIssuers() {
            for (grounds, digest) in (try clearingList(issuer: issuer)).listings[wallet] ?? [:] where grounds != .proven
            {
                found.append(Listing(wallet: wallet, grounds: grounds, digest: digest))
            }
        }
        return found.sorted()
    }

    /// The issuers whose clearing list this wallet may hold.
    private func clearingIssuers() throws -> [WalletID] {
        isIssuer ? [walletID] : try trustedIssuers().sorted { $0.bytes.lexicographicallyPrecedes($1.bytes) }
    }

    /// The listings of `list` that name this wallet or a counterparty of one of its entries.
    private func concerningListings(_ list: ClearingListFollower) throws -> [Listing] {
        guard !list.listings.isEmpty else { return [] }
        var names: Set<WalletID> = [walletID]
        try ledger.forEachEntry(from: 0, to: size) { entry in
            if let peer = WalletID(bytes: entry.counterparty) { names.insert(peer) }
        }
        return list.listings.filter { names.contains($0.key) }.flatMap { wallet, byGrounds in
            byGrounds.map { Listing(wallet: wallet, grounds: $0.key, digest: $0.value) }
        }.sorted()
    }
}

extension Wallet {
    /// The evidence that bars `wallet` from paying this one: fork evidence this wallet found itself, or else a
    /// proven listing in the list of an issuer's clearing it holds (docs/CLEARING.md §2.9).
    public func refusingEvidence(against wallet: WalletID) throws -> EvidenceDigest? {
        if let own = try ledger.banningEvidence(against: wallet) { return own }
        return try provenListing(of: wallet).flatMap { EvidenceDigest(bytes: $0.digest.bytes) }
    }
}
