import SecureCrypto

/// Where a wallet keeps its anchor. The ledger's `settings` entries decide it, never `wallet.json`.
public enum AnchorKind: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// A private data object on the wallet's token: a rollback of the whole wallet folder is caught.
    case token = 1
    /// A file in the user's state folder: only a rollback of the database alone is caught.
    case file = 2

    /// "token" or "file", as `wallet.json` and the messages spell it.
    public var description: String {
        switch self {
        case .token: "token"
        case .file: "file"
        }
    }

    /// The kind spelled `text`, or nil.
    public init?(name text: String) {
        guard let kind = AnchorKind.allCases.first(where: { $0.description == text }) else { return nil }
        self = kind
    }
}

/// The span an offline limit counts credits over: a rolling window that ends at the credit, so no calendar
/// boundary lets a payer be credited the limit twice in a minute (once before midnight and once after).
public enum OfflineWindow: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// The last 24 hours.
    case day = 1
    /// The last 7 days.
    case week = 2
    /// The last 30 days.
    case month = 3

    /// The window's length.
    public var milliseconds: Int64 {
        switch self {
        case .day: 86_400_000
        case .week: 7 * 86_400_000
        case .month: 30 * 86_400_000
        }
    }

    /// "day", "week" or "month".
    public var description: String {
        switch self {
        case .day: "day"
        case .week: "week"
        case .month: "month"
        }
    }

    /// The window spelled `text`, or nil.
    public init?(name text: String) {
        guard let window = OfflineWindow.allCases.first(where: { $0.description == text }) else { return nil }
        self = window
    }
}

/// The most a payee credits from one payer in one currency within a window, with no clearing online. A
/// token's owner can sign any balance, so no offline check stops money made from nothing; this limit bounds
/// what one payer can make a payee lose that way. See docs/THREAT-MODEL.md, "Sound money".
public struct OfflineLimit: Hashable, Sendable {
    /// The amount; zero refuses every offline credit in its currency.
    public let amount: Money
    /// The window the amount applies to.
    public let window: OfflineWindow

    /// A limit of `amount` per `window`.
    public init(amount: Money, window: OfflineWindow) {
        self.amount = amount
        self.window = window
    }

    /// The default in major units: 150 per payer per rolling day. It matches the cumulative limit that EU
    /// rules (PSD2's strong-authentication exemption for contactless payments) put on card payments made
    /// without the bank checking, the loss a person already accepts from a lost card; a shop that takes
    /// more from one customer offline sets its own limit with `secure policy set`.
    public static let defaultMajorUnits: Int64 = 150

    /// The limit in force for a currency no `settings` entry names: 150 major units a day.
    public static func defaultLimit(_ currency: Currency) -> OfflineLimit {
        // 150 × 10^4 at most, far below Int64.max.
        let amount = try! Money(minorUnits: defaultMajorUnits * currency.minorUnitsPerMajorUnit, currency: currency)
        return OfflineLimit(amount: amount, window: .day)
    }
}

/// A safeguard of the wallet's token that the wallet's owner gave up, recorded by a signed `settings`
/// entry (tags 5 and 6) so that every later command uses the token the same way without repeating the flag.
/// The raw value is the entry's tag. SecureToken's `TokenPolicy` is what a token session makes of them.
public enum TokenAllowance: UInt8, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    /// `--allow-unenforced-pin`: a token that does not enforce the PIN for each signature.
    case unenforcedPIN = 5
    /// `--allow-unproven-origin`: a key the token does not prove it generated.
    case unprovenOrigin = 6

    /// "unenforced-pin" or "unproven-origin": the flag's name after `--allow-`, as commands and `wallet show`
    /// spell it.
    public var description: String {
        switch self {
        case .unenforcedPIN: "unenforced-pin"
        case .unprovenOrigin: "unproven-origin"
        }
    }

    /// The allowance spelled `text` ("unenforced-pin", "unproven-origin"), or nil.
    public init?(name text: String) {
        guard let allowance = TokenAllowance.allCases.first(where: { $0.description == text }) else { return nil }
        self = allowance
    }
}

/// One change to the wallet's settings: the payload of a `settings` entry, tag byte ‖ body. Tags 1 and 2
/// are reserved for issuer trust and untrust. See docs/PROTOCOL.md, "Settings entries".
public enum SettingsChange: Hashable, Sendable {
    /// Tags 1 and 2: trust or stop trusting an issuer (`IssuerTrustChange`).
    case issuerTrust(IssuerTrustChange)
    /// Tag 3: where the anchor is kept from this entry on.
    case anchorKind(AnchorKind)
    /// Tag 4: the offline limit for the amount's currency, replacing the one in force.
    case offlineLimit(OfflineLimit)
    /// Tags 5 and 6: whether the wallet's token is used without one of its safeguards, from this entry on.
    case tokenAllowance(TokenAllowance, allowed: Bool)
    /// Tag 7: a contact was stored; the body is the SHA-256 of its record (`ContactRecord.digest`), never
    /// its wallet id or name, so a ledger shown to an auditor names no one.
    case contactAdded(Digest32)
    /// Tag 8: the contact whose record has this digest was removed. The entry that added it stays.
    case contactRemoved(Digest32)
    /// Tag 9: one contact's record was replaced by another (a rename, or a newer key-event log).
    case contactReplaced(old: Digest32, new: Digest32)

    /// The tag bytes, which never change meaning.
    public enum Tag: UInt8, Sendable, CaseIterable {
        /// Reserved: trust an issuer.
        case issuerTrust = 1
        /// Reserved: stop trusting an issuer.
        case issuerUntrust = 2
        /// The anchor kind.
        case anchorKind = 3
        /// A payee's offline limit for one currency.
        case offlineLimit = 4
        /// Whether the token is used though it does not enforce the PIN per signature.
        case allowUnenforcedPIN = 5
        /// Whether the token's keys are used though their origin is unproven.
        case allowUnprovenOrigin = 6
        /// A contact record's digest, added.
        case contactAdded = 7
        /// A contact record's digest, removed.
        case contactRemoved = 8
        /// A contact record's digest, replaced by another.
        case contactReplaced = 9
    }

    /// This change's tag.
    public var tag: Tag {
        switch self {
        case .issuerTrust(.trust): .issuerTrust
        case .issuerTrust(.untrust): .issuerUntrust
        case .anchorKind: .anchorKind
        case .offlineLimit: .offlineLimit
        case .tokenAllowance(.unenforcedPIN, _): .allowUnenforcedPIN
        case .tokenAllowance(.unprovenOrigin, _): .allowUnprovenOrigin
        case .contactAdded: .contactAdded
        case .contactRemoved: .contactRemoved
        case .contactReplaced: .contactReplaced
        }
    }

    /// Whether this change is about contacts (tags 7–9): such entries leave the wallet only as their
    /// position, id and leaf hash (audit bundles), never their content.
    public var isContactChange: Bool {
        switch self {
        case .contactAdded, .contactRemoved, .contactReplaced: true
        case .issuerTrust, .anchorKind, .offlineLimit, .tokenAllowance: false
        }
    }

    /// The entry payload: tag u8 ‖ body.
    public var payload: [UInt8] {
        if case .issuerTrust(let change) = self { return change.encoded }
        var writer = ByteWriter()
        writer.write(tag.rawValue)
        switch self {
        case .issuerTrust: break
        case .anchorKind(let kind):
            writer.write(kind.rawValue)
        case .offlineLimit(let limit):
            limit.amount.encode(into: &writer)
            writer.write(limit.window.rawValue)
        case .tokenAllowance(_, let allowed):
            writer.write(UInt8(allowed ? 1 : 0))
        case .contactAdded(let digest), .contactRemoved(let digest):
            writer.write(digest)
        case .contactReplaced(let old, let new):
            writer.write(old)
            writer.write(new)
        }
        return writer.bytes
    }

    /// Decodes a `settings` entry's payload. The payload is a complete field, so a short one is malformed:
    /// this throws on it, as on an unknown tag, an unknown value or trailing bytes.
    public static func decode(payload: [UInt8]) throws -> SettingsChange {
        var reader = ByteReader(payload)
        func short() -> FormatError { FormatError(.invalidValue, "the settings payload is truncated") }
        guard let tagByte = reader.readUInt8() else { throw short() }
        guard let tag = Tag(rawValue: tagByte) else {
            throw FormatError(.invalidValue, "settings tag \(tagByte) is not known")
        }
        let change: SettingsChange
        switch tag {
        case .issuerTrust, .issuerUntrust:
            // The trust change reads its own tag and checks its own end.
            guard let trust = try IssuerTrustChange.decode(payload) else { throw short() }
            return .issuerTrust(trust)
        case .anchorKind:
            guard let byte = reader.readUInt8() else { throw short() }
            guard let kind = AnchorKind(rawValue: byte) else {
                throw FormatError(.invalidValue, "anchor kind \(byte) is not known")
            }
            change = .anchorKind(kind)
        case .offlineLimit:
            guard let amount = try Money.decode(from: &reader), let byte = reader.readUInt8() else { throw short() }
            guard let window = OfflineWindow(rawValue: byte) else {
                throw FormatError(.invalidValue, "offline limit window \(byte) is not known")
            }
            change = .offlineLimit(OfflineLimit(amount: amount, window: window))
        case .allowUnenforcedPIN, .allowUnprovenOrigin:
            guard let byte = reader.readUInt8() else { throw short() }
            guard byte <= 1 else { throw FormatError(.invalidValue, "token allowance \(byte) is neither 0 nor 1") }
            // The tag's number is the allowance's raw value.
            guard let allowance = TokenAllowance(rawValue: tag.rawValue) else {
                preconditionFailure("tags 5 and 6 are the token allowances")
            }
            change = .tokenAllowance(allowance, allowed: byte == 1)
        case .contactAdded, .contactRemoved:
            guard let digest = reader.read(Digest32.self) else { throw short() }
            change = tag == .contactAdded ? .contactAdded(digest) : .contactRemoved(digest)
        case .contactReplaced:
            guard let old = reader.read(Digest32.self), let new = reader.read(Digest32.self) else { throw short() }
            change = .contactReplaced(old: old, new: new)
        }
        try reader.expectEnd("settings change")
        return change
    }
}

/// The wallet's settings, derived from its `settings` entries in ledger order and from nothing else: an
/// unsigned file or table row cannot change them.
public struct WalletSettings: Hashable, Sendable {
    /// Where the anchor is kept; the token until a `settings` entry says otherwise.
    public private(set) var anchorKind: AnchorKind = .token
    /// The offline limits set per currency; others get `OfflineLimit.defaultLimit`.
    public private(set) var offlineLimits: [Currency: OfflineLimit] = [:]
    /// The issuers this wallet trusts, by their wallet ids: tags 1 and 2, in ledger order.
    public private(set) var trustedIssuers: Set<WalletID> = []
    /// Whether the ledger is an issuer's (its inception says so). An issuer's default offline limit is zero:
    /// a payment back to it (a redemption) lowers what it owes, and offline nothing tells money a holder
    /// received from money a software key signed for itself, so by default an issuer takes redemptions only
    /// up to a limit it sets itself (`secure policy set`), until its clearing (issue 20) confirms them.
    public private(set) var isIssuer = false
    /// The token safeguards the owner gave up (tags 5 and 6); none until a `settings` entry says so.
    public private(set) var tokenAllowances: Set<TokenAllowance> = []
    /// The digests of the current contacts' records (tags 7–9, in ledger order).
    public private(set) var contactDigests: Set<Digest32> = []

    /// The settings of a ledger with no `settings` entry.
    public init() {}

    /// The settings of an issuer's ledger: the same entries, a default offline limit of zero.
    public func issuers() -> WalletSettings {
        var next = self
        next.isIssuer = true
        return next
    }

    /// The settings after the `settings` entries among `entries`, in order.
    public static func replay(_ entries: some Sequence<LedgerEntry>) throws -> WalletSettings {
        var settings = WalletSettings()
        for entry in entries where entry.kind == .settings {
            settings = try settings.applying(try SettingsChange.decode(payload: entry.payload))
        }
        return settings
    }

    /// The settings with one change applied, or a throw that changes nothing: a contact added twice, or
    /// removed or replaced while not current, is refused (a wallet never signs one).
    public func applying(_ change: SettingsChange) throws -> WalletSettings {
        var next = self
        switch change {
        case .issuerTrust(let trust): IssuerTrustChange.apply(trust, to: &next.trustedIssuers)
        case .anchorKind(let kind): next.anchorKind = kind
        case .offlineLimit(let limit): next.offlineLimits[limit.amount.currency] = limit
        case .tokenAllowance(let allowance, let allowed):
            if allowed { next.tokenAllowances.insert(allowance) } else { next.tokenAllowances.remove(allowance) }
        case .contactAdded(let digest):
            guard next.contactDigests.insert(digest).inserted else {
                throw FormatError(.invalidValue, "contact \(digest.hex) is added while it is current")
            }
        case .contactRemoved(let digest):
            guard next.contactDigests.remove(digest) != nil else {
                throw FormatError(.invalidValue, "contact \(digest.hex) is removed while it is not current")
            }
        case .contactReplaced(let old, let new):
            guard old != new, next.contactDigests.remove(old) != nil, next.contactDigests.insert(new).inserted else {
                throw FormatError(
                    .invalidValue, "contact \(old.hex) is replaced while it is not current, or by a current one")
            }
        }
        return next
    }

    /// The offline limit in force for `currency`.
    public func offlineLimit(_ currency: Currency) -> OfflineLimit {
        offlineLimits[currency]
            ?? (isIssuer ? OfflineLimit(amount: .zero(currency), window: .day) : .defaultLimit(currency))
    }

    /// The longest window of any limit in force: credits older than that count against no limit.
    public var longestOfflineWindow: OfflineWindow {
        offlineLimits.values.map(\.window).max { $0.milliseconds < $1.milliseconds } ?? .day
    }
}

/// What one payer was credited, per currency, each within its currency's offline-limit window ending at a
/// given time, plus what the payee approved for it and was not paid yet. A payee computes it from its own
/// `paymentIn` entries and ready records before it approves a payment (peer mode) or credits one (file
/// mode); `tally` is the one place that sum is made.
///
/// Counting the approvals keeps every window within the limit whatever the order of events: each approval
/// checks credits-in-window + outstanding approvals + amount ≤ limit, a credit only moves an amount from
/// approved to credited, and time only drops credits out of the window.
public struct PayerOfflineCredits: Hashable, Sendable {
    /// The payer.
    public let payer: WalletID
    /// The end of the windows, in Unix milliseconds.
    public let time: Int64
    /// The limits in force.
    public let settings: WalletSettings
    /// Credited per currency within that currency's window, plus the outstanding approvals; a sum past
    /// Int64.max is kept as Int64.max.
    public let credited: [Currency: Money]

    /// Sums the `paymentIn` entries among `entries` whose counterparty is `payer` and whose time lies in
    /// the window of their currency's limit ending at `time`: (time − window, time], and the amounts of the
    /// payer's `approved` payments not paid yet (whatever their age). Other entries are skipped, so a caller
    /// may pass every entry since `earliestTime(settings:time:)`.
    public static func tally(
        payer: WalletID, settings: WalletSettings, time: Int64, entries: some Sequence<LedgerEntry>,
        approved: [Money] = []
    ) -> PayerOfflineCredits {
        var credited: [Currency: Money] = [:]
        func add(_ amount: Money) {
            let sum = credited[amount.currency] ?? .zero(amount.currency)
            credited[amount.currency] =
                (try? sum.adding(amount)) ?? (try! Money(minorUnits: .max, currency: amount.currency))
        }
        for entry in entries where entry.kind == .paymentIn && entry.counterparty == payer.bytes {
            guard let amount = entry.amount else { continue }
            let window = settings.offlineLimit(amount.currency).window
            guard entry.time > time - window.milliseconds, entry.time <= time else { continue }
            add(amount.money)
        }
        approved.forEach(add)
        return PayerOfflineCredits(payer: payer, time: time, settings: settings, credited: credited)
    }

    /// The earliest entry time a tally at `time` can count: older entries lie outside every window.
    public static func earliestTime(settings: WalletSettings, time: Int64) -> Int64 {
        time - settings.longestOfflineWindow.milliseconds
    }

    /// Makes the credits from their parts (tests and the simulator's auditor).
    public init(payer: WalletID, time: Int64, settings: WalletSettings, credited: [Currency: Money]) {
        self.payer = payer
        self.time = time
        self.settings = settings
        self.credited = credited
    }

    /// The allowance left in `currency`.
    public func allowance(_ currency: Currency) -> OfflineAllowance {
        OfflineAllowance(
            payer: payer, limit: settings.offlineLimit(currency), credited: credited[currency] ?? .zero(currency))
    }
}

/// One payer's offline limit in one currency, and what it was credited within the limit's window.
public struct OfflineAllowance: Hashable, Sendable {
    /// The payer.
    public let payer: WalletID
    /// The limit in force.
    public let limit: OfflineLimit
    /// Credited from the payer within the window.
    public let credited: Money

    /// Collects the parts.
    public init(payer: WalletID, limit: OfflineLimit, credited: Money) {
        self.payer = payer
        self.limit = limit
        self.credited = credited
    }

    /// Whether crediting `amount` more keeps the payer within the limit.
    public func permits(_ amount: Money) -> Bool {
        guard amount.currency == limit.amount.currency, let total = try? credited.adding(amount) else { return false }
        return total <= limit.amount
    }

    /// What the payer may still be credited: the limit less what was credited, never below zero.
    public var remaining: Money {
        (try? limit.amount.subtracting(credited)) ?? .zero(limit.amount.currency)
    }
}
