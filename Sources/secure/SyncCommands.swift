import CommandLineSupport
import Foundation
import SecureCore
import SecureCrypto
import SecureSync
import SecureWallet

enum SyncCommands {
    static let help = """
        Usage: secure sync [--clearing URL] [--issuer ID] [--chunk-entries N] [--insecure-loopback]
          Sends this wallet's signed history since its last sync to its issuer's clearing (docs/CLEARING.md
          §2.7): entries of the issuer's money whole, everything else opaque (id, digest, leaf hash), in chunks
          of at most N entries (default and at most 1024); then its signed claim (one PIN) with the checkpoint
          and the consistency proof from the checkpoint the clearing cosigned last. A first sync asks for
          admission with the first deposit or payment in of the issuer's money. The answer, the clearing's
          cosignature and its list of wallets, is checked under the clearing key the issuer's key-event log
          names and kept. A wallet the list names PROVEN (fork evidence, which `secure evidence verify` checks)
          is refused from then on, as payer and as payee; other listings are shown as warnings.
          --clearing defaults to the URL the issuer's delegation names; the connection is https, pinned to the
          TLS key the delegation names. --insecure-loopback allows plain http to 127.0.0.1 or localhost (tests).
          --issuer names the issuer when this wallet trusts more than one.
        """

    static func sync(_ words: [String]) throws -> ExitCode {
        let arguments = try Arguments(
            words, options: walletOptions.union(["clearing", "issuer", "chunk-entries"]),
            flags: appendingFlags.union(["insecure-loopback"]))
        _ = try arguments.positionals(0, "no positional arguments")
        let chunkEntries = try arguments.integer(
            "chunk-entries", default: ClearingLimits.syncChunkEntryCountMax, max: ClearingLimits.syncChunkEntryCountMax)
        var named: WalletID?
        if let text = arguments.value("issuer") {
            guard let id = WalletID(hex: text.lowercased()) else {
                throw UsageError("\(text) is not a wallet id (64 hex digits)")
            }
            named = id
        }
        let wallet = try openWallet(arguments, .appending)
        let issuer = try wallet.clearingIssuer(named)
        let delegation = try wallet.clearingDelegation(issuer: issuer)
        let url = arguments.value("clearing") ?? delegation.url
        let client = try ClearingClient(
            url: url, tlsKeyDigest: delegation.tlsKeyDigest, insecureLoopback: arguments.flag("insecure-loopback"))
        let held = try wallet.clearingList(issuer: issuer).head.version
        let done = try client.sync(
            wallet: wallet.walletID, listVersion: held, admission: { try wallet.admissionRequest(issuer: issuer) },
            upload: { try wallet.syncUpload(issuer: issuer, base: $0, chunkEntryCountMax: chunkEntries) },
            parts: { ($0.chunks, $0.close) })
        let upload = done.upload
        if done.admitted { print("admitted by the clearing of issuer \(issuer.hex)") }
        print(
            "sent entries \(upload.base) … \(upload.size) to \(url): \(upload.wholeCount) whole, "
                + "\(upload.opaqueCount) opaque, in \(upload.chunks.count) chunk\(upload.chunks.count == 1 ? "" : "s")")
        let result = try wallet.applySyncAnswer(done.answer, for: upload)
        print("cosigned at size \(result.cosignedSize) in batch \(result.batch); list version \(result.listVersion)")
        if let refusal = result.listRefusal {
            printError(
                "warning: the clearing's list update was not applied (\(refusal)); the list stays at version "
                    + "\(result.listVersion)")
        }
        for listing in result.concerning {
            let effect =
                listing.grounds == .proven
                ? "refused as payer and payee; `secure evidence verify` checks the evidence" : "a warning only"
            print("listed \(listing.grounds): wallet \(listing.wallet.hex), evidence \(listing.digest.hex) (\(effect))")
        }
        return .success
    }
}
