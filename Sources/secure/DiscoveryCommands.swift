import CommandLineSupport
import Foundation
import SecureCore
import SecureDiscovery

/// `receive --announce` and `pay --near`: finding a receiver on the local network by DNS-SD through the
/// system's Avahi daemon, with no wallet identity in what is announced (docs/PROTOCOL.md, "Discovery").
extension PeerCommands {
    /// The most seconds `pay --near` browses (`--near-seconds`; default 3).
    static let nearSecondsDefault = 3.0
    /// Tries with fresh random names before an announcement gives up on clashes (see `announce`).
    static let announceAttemptsMax = 3

    /// `--announce` needs an end (`--count` or `--for`): an announcement that outlives its purpose tells the
    /// network a wallet is here for longer than a payment needs. Without --listen, it listens on every
    /// interface on a port the kernel picks.
    static func announceListenAddress(_ arguments: Arguments) throws -> String? {
        guard arguments.flag("announce") else { return arguments.value("listen") }
        guard arguments.value("count") != nil || arguments.value("for") != nil else {
            throw UsageError(
                "--announce needs --count N or --for SECONDS: an announcement lasts only as long as it is needed")
        }
        return arguments.value("listen") ?? "0.0.0.0:0"
    }

    /// Announces the receiver listening on `host:port`: a random instance name, a random SRV host name that
    /// maps to each address it listens on, and a TXT record with a version and a fresh nonce only.
    static func announce(
        host: String, port: UInt16, person: TerminalPerson, record: @autoclosure () -> DiscoveryRecord = .fresh()
    ) throws -> (announcer: Announcer, record: DiscoveryRecord) {
        let addresses = NetworkInterfaces.multicastIPv4(only: host == "0.0.0.0" ? nil : host)
        guard !addresses.isEmpty else {
            throw DiscoveryError(
                .noInterface,
                host == "0.0.0.0"
                    ? "no network interface that is up and carries multicast has an IPv4 address to announce"
                    : "\(host) is not the IPv4 address of an interface that carries multicast; --listen another")
        }
        // A clash of random names is vanishingly rare, so a second and third one mean someone answers for
        // every name (a squatter): three tries with fresh names and nonces, then the error says to use --to.
        var attempt = 0
        let announcer: Announcer
        var announced: DiscoveryRecord
        while true {
            attempt += 1
            announced = record()
            do {
                announcer = try Announcer(
                    type: DiscoveryRecord.payServiceType, port: port, txt: announced.txt,
                    addresses: addresses, instanceName: DiscoveryRecord.randomInstanceName(),
                    hostLabel: DiscoveryRecord.randomHostLabel())
                break
            } catch let error as DiscoveryError where error.code == .collision && attempt < announceAttemptsMax {
                continue
            }
        }
        person.event(
            "announced",
            [
                "instance": announcer.instanceName, "host": announcer.hostName, "port": "\(port)",
                "addresses": addresses.map(\.address).joined(separator: ","),
            ],
            "announced on the local network as \(announcer.instanceName) (\(DiscoveryRecord.payServiceType), "
                + "port \(port), \(addresses.map(\.address).joined(separator: ", "))); the announcement names no wallet"
        )
        return (announcer, announced)
    }

    /// Why a found service cannot be picked, or nil when it can: its name is not of the shape this build
    /// announces, it points at this machine (which would steer the wallet to a local service), or its TXT
    /// record is not a wallet's.
    static func refusal(of service: FoundService, ownAddresses: Set<String>) -> Error? {
        do {
            guard DiscoveryRecord.isWalletInstanceName(service.instanceName) else {
                throw DiscoveryError(.malformedRecord, "its name is not a wallet's (secure- and 12 hex digits)")
            }
            guard !service.address.hasPrefix("127."), service.address != "0.0.0.0",
                !ownAddresses.contains(service.address)
            else {
                throw DiscoveryError(.malformedRecord, "it points at this machine")
            }
            _ = try DiscoveryRecord(txt: service.txtPairs)
            return nil
        } catch {
            return error
        }
    }

    /// `pay --near`: browses, lists what answers, and returns the one picked with `--pick N` or at the
    /// terminal. Instance names come from anyone on the network, so they are shown as peer text; an
    /// announcement whose TXT record is not a wallet's is listed as such and cannot be picked.
    static func nearAddress(_ arguments: Arguments, person: TerminalPerson) throws -> (host: String, port: UInt16) {
        guard arguments.value("to") == nil else { throw UsageError("--near and --to both say where to pay; pick one") }
        // Anyone on the network can announce, under any name and in any position of the list: a script that
        // pays what it found must say whom it means to pay, or it pays whoever sorts first.
        guard !arguments.flag("yes") || arguments.value("expect-payee") != nil else {
            throw UsageError(
                "pay --near --yes needs --expect-payee CARD|WALLET-ID: anyone on the network can announce, so a "
                    + "script must name the wallet it means to pay")
        }
        let seconds = try browseSeconds(arguments)
        let found = try Browser.browse(type: DiscoveryRecord.payServiceType, seconds: seconds)
            .sorted { ($0.instanceName, $0.address) < ($1.instanceName, $1.address) }
        var choices: [FoundService] = []
        // An announcement that points at this machine (loopback, or one of its own addresses) would steer
        // the payer's wallet to a local service: never offered.
        let own = Set(NetworkInterfaces.multicastIPv4().map(\.address))
        for service in found {
            let shown = PeerText.escaped(service.instanceName, limit: 40)
            do {
                if let refusal = refusal(of: service, ownAddresses: own) { throw refusal }
                choices.append(service)
                person.event(
                    "found",
                    [
                        "choice": "\(choices.count)", "instance": service.instanceName, "address": service.address,
                        "port": "\(service.port)",
                    ], "  \(choices.count). \(shown) at \(service.address):\(service.port)")
            } catch {
                person.event(
                    "ignored", ["instance": service.instanceName, "reason": "\(error)"],
                    "  -  \(shown) at \(service.address):\(service.port): not a wallet this build can pay (\(error))")
            }
        }
        guard !choices.isEmpty else {
            throw DiscoveryError(
                .notFound,
                "no wallet announced \(DiscoveryRecord.payServiceType) within \(seconds) s; the payee runs "
                    + "`secure receive --announce --count 1`, or give its address with --to HOST:PORT")
        }
        let pick = try pickNumber(
            of: choices.count, arguments, question: "Pay which?", none: "no receiver picked; nothing was paid",
            scripted: "\(choices.count) found; pass --pick N (a script must say which, even when one answers)")
        let chosen = choices[pick - 1]
        return (chosen.address, chosen.port)
    }

    /// `--near-seconds`: how long to browse (default `nearSecondsDefault`, at most `Browser.secondsMax`).
    static func browseSeconds(_ arguments: Arguments) throws -> Double {
        try arguments.value("near-seconds").map { text -> Double in
            guard let value = Double(text), value > 0, value <= Browser.secondsMax else {
                throw UsageError("--near-seconds takes more than 0 and at most \(Int(Browser.secondsMax)) seconds")
            }
            return value
        } ?? nearSecondsDefault
    }

    /// Which of `count` listed announcements to use (1-based): `--pick N`, else the only one when
    /// `onlyOne` allows it, else asked on a terminal (`question`; anything else is `none`); a script that
    /// gave neither gets `scripted`.
    static func pickNumber(
        of count: Int, _ arguments: Arguments, question: String, none: String, scripted: String, onlyOne: Bool = false
    ) throws -> Int {
        if let text = arguments.value("pick") {
            guard let number = Int(text), number >= 1, number <= count else {
                throw UsageError("--pick takes a number from 1 to \(count), as listed")
            }
            return number
        }
        if onlyOne, count == 1 { return 1 }
        guard isatty(STDIN_FILENO) == 1, !arguments.flag("yes") else { throw UsageError(scripted) }
        let answer = TerminalPerson.ask("\(question) 1-\(count) (anything else: none): ")
        guard let answer, let number = Int(answer), number >= 1, number <= count else { throw UsageError(none) }
        return number
    }

    /// `--for SECONDS`: the receiver stops taking connections after this long (live sessions may finish).
    static func serveSeconds(_ arguments: Arguments) throws -> Double? {
        try arguments.value("for").map { text in
            guard let value = Double(text), value > 0, value <= 86_400 else {
                throw UsageError("--for takes 1 to 86400 seconds")
            }
            return value
        }
    }
}
