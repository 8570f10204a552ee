import Foundation
import SecureCore
import SecureCrypto
import SecureToken

/// What `secure-clearing serve` sets up before it listens: the issuer's log from its wallet card, and the
/// clearing key on its token in a session that holds the PIN for the process's life.
public enum ClearingServe {
    /// The issuer's key-event log from a wallet card file (`secure wallet show --card` on the issuer's wallet);
    /// it must be an issuer's log that delegates a clearing.
    public static func issuerLog(cardFile path: String) throws -> KeyEventLog {
        guard let bytes = FileManager.default.contents(atPath: path) else {
            throw ClearingServiceError(.wrongClearingKey, "cannot read the issuer card \(path)")
        }
        let card: WalletCard
        do {
            card = try WalletCard.parse(String(decoding: bytes, as: UTF8.self))
        } catch let error as any CodedError {
            throw ClearingServiceError(.wrongClearingKey, "\(path) is not a wallet card: \(error.message)")
        }
        guard card.log.events.first?.event.kind == .issuerInception else {
            throw ClearingServiceError(.wrongClearingKey, "\(path) is the card of a wallet that is not an issuer")
        }
        guard card.log.clearingInForce != nil else {
            throw ClearingServiceError(
                .wrongClearingKey, "the issuer of \(path) delegates no clearing (secure issuer delegate-clearing)")
        }
        return card.log
    }

    /// A signer for the clearing key `keyURI` names, in a session logged in with the PIN read from `pinFile`
    /// (the file holds the PIN alone, mode 0600). The session holds the PIN for the process's life: the
    /// clearing key signs a batch head a second without a person (docs/CLEARING.md §3.1). Close the session
    /// when the process stops.
    /// `allowUnprovenOrigin` and `allowUnenforcedPIN` give up the token safeguards the wallet's flags of the
    /// same names give up (TokenPolicy).
    public static func clearingSigner(
        keyURI text: String, pinFile: String, allowUnprovenOrigin: Bool = false, allowUnenforcedPIN: Bool = false
    ) throws -> (signer: MessageSigner, session: TokenSession) {
        let uri = try PKCS11URI(text)
        let token = try TokenLibrary.shared.token(uri)
        let pin = try PINSource(spec: "file:" + pinFile).read()
        let session = try TokenSession(
            token: token, pin: pin,
            policy: TokenPolicy(allowUnenforcedPIN: allowUnenforcedPIN, allowUnprovenOrigin: allowUnprovenOrigin))
        do {
            return (try TokenSigner(session: session, keyURI: uri), session)
        } catch {
            session.close()
            throw error
        }
    }
}

extension ClearingServe {
    /// Milliseconds of a duration written as a count and a unit: "30s", "5m", "12h", "7d"; nil otherwise.
    public static func milliseconds(duration text: String) -> Int64? {
        guard let unit = text.last, let count = Int64(text.dropLast()), count > 0 else { return nil }
        let scale: Int64
        switch unit {
        case "s": scale = 1000
        case "m": scale = 60_000
        case "h": scale = 3_600_000
        case "d": scale = 86_400_000
        default: return nil
        }
        let (product, overflow) = count.multipliedReportingOverflow(by: scale)
        return overflow ? nil : product
    }
}

extension ClearingServe {
    /// The service of `serve --store memory`: the issuer's log from `issuerCard`, the clearing key on its
    /// token, an empty `LockedInMemoryClearingStore`. `close` stops the batcher and closes the token session.
    /// Throws `wrongClearingKey` when the key is not the delegation's in force.
    /// The service over the store `makeStore` gives for the card's issuer (PostgreSQL in `serve --db`).
    public static func service<Store: ClearingServiceStore>(
        issuerCard: String, clearingKey: String, pinFile: String, allowUnprovenOrigin: Bool = false,
        allowUnenforcedPIN: Bool = false, configuration: ClearingServiceConfiguration,
        makeStore: (WalletID) -> Store
    ) throws -> (service: ClearingService<Store>, close: () -> Void) {
        let log = try issuerLog(cardFile: issuerCard)
        let key = try clearingSigner(
            keyURI: clearingKey, pinFile: pinFile, allowUnprovenOrigin: allowUnprovenOrigin,
            allowUnenforcedPIN: allowUnenforcedPIN)
        do {
            let service = try ClearingService(
                clearing: Clearing(issuerLog: log, store: makeStore(log.walletID)), signer: key.signer,
                configuration: configuration)
            return (
                service,
                {
                    service.stop(); key.session.close()
                }
            )
        } catch {
            key.session.close()
            throw error
        }
    }

    public static func memoryService(
        issuerCard: String, clearingKey: String, pinFile: String, allowUnprovenOrigin: Bool = false,
        allowUnenforcedPIN: Bool = false, configuration: ClearingServiceConfiguration
    ) throws -> (service: ClearingService<LockedInMemoryClearingStore>, close: () -> Void) {
        let log = try issuerLog(cardFile: issuerCard)
        let key = try clearingSigner(
            keyURI: clearingKey, pinFile: pinFile, allowUnprovenOrigin: allowUnprovenOrigin,
            allowUnenforcedPIN: allowUnenforcedPIN)
        do {
            let store = LockedInMemoryClearingStore(now: ClearingClock.unixMilliseconds)
            let service = try ClearingService(
                clearing: Clearing(issuerLog: log, store: store), signer: key.signer, configuration: configuration,
                health: {
                    // The in-memory store has no schema: version 0.
                    .json(
                        status: 200,
                        [
                            "format": ClearingHealthService.healthFormat, "schemaVersion": 0,
                            "pid": Int(ProcessInfo.processInfo.processIdentifier),
                        ])
                })
            return (
                service,
                {
                    service.stop(); key.session.close()
                }
            )
        } catch {
            key.session.close()
            throw error
        }
    }
}
