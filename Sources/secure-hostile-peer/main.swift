// TEST TOOL ONLY, never installed: a receiver that sends what the stock `secure` refuses to send, so the
// tests can check what a payer's terminal shows when a hostile peer chooses its note and name. Everything
// else is the real thing: the wallet on its token, the post-quantum channel, the shared PeerActions.
//
//   secure-hostile-peer --wallet DIR --pin-source SPEC --listen PORT --request "32.00 EUR"
//       [--note-hex HEX] [--name-hex HEX]
//
// It answers every approval with yes, ranges by simulation at 420 mm, serves one session and exits.
import CommandLineSupport
import Foundation
import SecureChannel
import SecureCore
import SecureCrypto
import SecurePeer
import SecureToken
import SecureWallet

final class Yes: PeerInterface {
    // The PIN is read from its source at each approval: a PIN is wiped after its use, so the one that
    // opened the wallet cannot approve the session too.
    let pinSource: PINSource
    init(pinSource: PINSource) { self.pinSource = pinSource }
    func decide(_ approval: Approval) -> PeerDecision { .approve(overridingBudget: false) }
    func chooseCategory(for request: PaymentRequest, from peer: PeerIdentity) -> CategoryChoice {
        .category("hostile")
    }
    func readPIN() throws -> PIN { try pinSource.read(prompt: "PIN: ") }
    func event(_ name: String, _ fields: [String: String], _ text: String) {
        print("hostile-peer: \(name): \(PeerText.escaped(text, limit: 200))")
        fflush(nil)
    }
}

func text(_ hex: String?) -> String {
    guard let hex, let bytes = Hex.decode(hex) else { return "" }
    return String(decoding: bytes, as: UTF8.self)
}

do {
    let arguments = try Arguments(
        Array(CommandLine.arguments.dropFirst()),
        options: ["wallet", "pin-source", "listen", "request", "note-hex", "name-hex"], flags: [])
    let paths = WalletPaths(directory: try arguments.required("wallet"))
    let metadata = try JSONDecoder().decode(
        WalletMetadata.self, from: Data(contentsOf: URL(fileURLWithPath: paths.metadata)))
    let uri = try PKCS11URI(metadata.token)
    let pinSource = try PINSource(spec: try arguments.required("pin-source"))
    let pin = try pinSource.read(prompt: "PIN: ")
    let session = try TokenSession(token: try TokenLibrary.shared.token(uri), pin: pin)
    let wallet = try Wallet.open(paths: paths, token: session)
    let amount = try wallet.requestAsset(for: try MoneyText.parse(try arguments.required("request")), issuer: nil)
    let request = try PaymentRequest(requestID: .random(), amount: amount, note: text(arguments.value("note-hex")))
    let listener = try TCPListener(host: "127.0.0.1", port: UInt16(try arguments.required("listen")) ?? 0)
    print("hostile-peer: listening on \(listener.port)")
    fflush(nil)
    let transport = try listener.accept(timeoutSeconds: 60)
    let channel = try SecureChannel.respond(over: transport)
    let driver = try PeerDriver(
        wallet: wallet, channel: channel, role: .receive(request: request), interface: Yes(pinSource: pinSource),
        ranging: .simulated(seed: 7, distanceMillimetres: 420), policy: RangingPolicy(allowsSimulated: true),
        displayName: text(arguments.value("name-hex")).isEmpty ? "receiver" : text(arguments.value("name-hex")))
    print("hostile-peer: outcome \(driver.run())")
} catch {
    print("hostile-peer: error \(error)")
    exit(1)
}
