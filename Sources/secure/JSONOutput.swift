import CommandLineSupport
import Foundation
import SecureCore
import SecureCrypto

// What `--json` prints. Every document is one object that names its format and version first thing a script
// reads (`"format": "secure-history-v3"`); listings are objects with their rows in an array; every amount is
// one object with integer minor units; a row has the same keys whatever it holds (JSON null for an absent
// value). Each format has a JSON Schema in docs/schemas, and docs/JSON.md says what bumps a version.

/// The formats `--json` prints, one per kind of document. The version is part of the name: it changes with
/// any change of shape (docs/JSON.md), and docs/schemas/NAME.vN.schema.json describes each exactly.
enum JSONFormat: String, CaseIterable {
    case tokenList = "secure-token-list-v2"
    case demoToken = "secure-demo-token-v2"
    case generatedKey = "secure-key-v2"
    case keyList = "secure-key-list-v2"
    case keyRotation = "secure-key-rotation-v3"
    case wallet = "secure-wallet-v3"
    case budgets = "secure-budgets-v2"
    case policy = "secure-policy-v2"
    case balance = "secure-balance-v2"
    case history = "secure-history-v3"
    case pending = "secure-pending-v2"
    case issuer = "secure-issuer-v2"
    case ledgerVerification = "secure-ledger-verification-v2"
    case auditVerification = "secure-audit-verification-v2"
    case contactList = "secure-contact-list-v1"
    case contact = "secure-contact-v1"
    /// One object per line for `pay`, `receive` and `retry`.
    case peerEvent = "secure-peer-event-v4"
    /// One object per line for `secure rehearse` (docs/TILL.md §4): the peer events of both sides and the
    /// rehearsal's own, each with `"rehearsal": true`.
    case rehearsalEvent = "secure-rehearsal-event-v1"
}

enum JSONOutput {
    /// Prints one document: `fields` with the format's name under "format".
    static func print(_ format: JSONFormat, _ fields: [String: Any]) {
        printJSON(document(format, fields))
    }

    /// `fields` with the format's name under "format".
    static func document(_ format: JSONFormat, _ fields: [String: Any]) -> [String: Any] {
        fields.merging(["format": format.rawValue]) { _, new in new }
    }

    /// An amount as every format writes it: `{"minorUnits": -450, "currency": "EUR", "scale": 2,
    /// "issuer": HEX or null, "text": "-4.50 EUR"}`. `minorUnits` is the integer a script computes with
    /// (negative for money out when `negative`); `text` is for people only. `issuer` is null for an amount
    /// that holds for a currency whatever its issuer (a budget's limit, an offline limit).
    static func amount(_ money: Money, issuer: WalletID?, negative: Bool = false) -> [String: Any] {
        // A Money is never negative, so its negation cannot overflow.
        let units = negative ? -money.minorUnits : money.minorUnits
        return [
            "minorUnits": units, "currency": money.currency.code, "scale": Int(money.currency.scale),
            "issuer": nullable(issuer?.hex), "text": (negative && !money.isZero ? "-" : "") + MoneyText.format(money),
        ]
    }

    /// An amount of one issuer's asset (see `amount(_:issuer:negative:)`).
    static func amount(_ amount: AssetAmount, negative: Bool = false) -> [String: Any] {
        self.amount(amount.money, issuer: amount.issuer, negative: negative)
    }

    /// The value, or JSON null: a row keeps its keys whatever it holds.
    static func nullable(_ value: Any?) -> Any { value ?? NSNull() }
}
