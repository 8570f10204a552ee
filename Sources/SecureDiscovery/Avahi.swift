internal import CAvahi
import Foundation
import SecureCore

// Every call into libavahi-client and libavahi-common, in this one file. Announcing and browsing go through
// the system's Avahi daemon over D-Bus (the system bus, or DBUS_SYSTEM_BUS_ADDRESS): no resolver of our own,
// no multicast socket of our own. C pointers never leave this file; callbacks find their Swift object
// through the userdata pointer, which the object outlives (it frees the C objects before it goes).

/// One service found on the local network, resolved to an IPv4 address and port.
public struct FoundService: Sendable, Equatable {
    /// The DNS-SD instance name (random for wallets: it names nothing).
    public let instanceName: String
    /// The SRV target host name.
    public let hostName: String
    /// The IPv4 address the host name resolved to, dotted.
    public let address: String
    /// The TCP port.
    public let port: UInt16
    /// The TXT record's key=value strings, as announced.
    public let txt: [String]

    /// The TXT strings split at their first "=" (a string with none is a key with an empty value).
    public var txtPairs: [(key: String, value: String)] {
        txt.map { entry in
            guard let equals = entry.firstIndex(of: "=") else { return (entry, "") }
            return (String(entry[..<equals]), String(entry[entry.index(after: equals)...]))
        }
    }
}

/// An IPv4 address of a local interface that can carry multicast DNS.
public struct InterfaceAddress: Sendable, Equatable {
    /// The interface's name (e.g. "eth0").
    public let name: String
    /// Its index, as Avahi takes it.
    public let index: Int32
    /// The address, dotted.
    public let address: String
}

/// The daemon's error for a failed call, as a sentence.
private func avahiMessage(_ error: Int32) -> String { String(cString: avahi_strerror(error)) }

/// A client that fails at once when no daemon runs (flags 0: no AVAHI_CLIENT_NO_FAIL).
private func makeClient(
    _ poll: UnsafePointer<AvahiPoll>?, _ callback: AvahiClientCallback, _ context: UnsafeMutableRawPointer
) throws -> OpaquePointer {
    var error: Int32 = 0
    guard let client = avahi_client_new(poll, AvahiClientFlags(rawValue: 0), callback, context, &error) else {
        if error == Int32(AVAHI_ERR_NO_DAEMON) {
            throw DiscoveryError(
                .noDaemon,
                "no Avahi daemon answers on the system bus (is avahi-daemon running?); without it, give the "
                    + "receiver's address with --to HOST:PORT")
        }
        throw DiscoveryError(.daemonFailed, "cannot reach the Avahi daemon: \(avahiMessage(error))")
    }
    return client
}

/// An announcement kept up while this object lives: one service under a random instance name, pointing at
/// a random host name that maps to each given interface address. The daemon answers queries for it; the
/// threaded poll handles the daemon's messages. `stop()` (or deinit) withdraws it.
public final class Announcer: @unchecked Sendable {
    /// The instance name announced.
    public let instanceName: String
    /// The SRV host name announced (label + ".local").
    public let hostName: String
    private let poll: OpaquePointer
    private var client: OpaquePointer?
    private var group: OpaquePointer?
    private let condition = NSCondition()
    private var groupState = AVAHI_ENTRY_GROUP_UNCOMMITED
    private var stopped = false

    /// Announces `type` on `port` with `txt`, at `addresses`, and waits until the daemon says the entries are
    /// established (probing for conflicts takes about a second), or throws.
    public init(
        type: String, port: UInt16, txt: [String], addresses: [InterfaceAddress], instanceName: String,
        hostLabel: String, timeoutSeconds: Double = 10
    ) throws {
        guard !addresses.isEmpty else {
            throw DiscoveryError(.noInterface, "no network interface with IPv4 multicast to announce on")
        }
        guard let poll = avahi_threaded_poll_new() else {
            throw DiscoveryError(.daemonFailed, "cannot make Avahi's event loop")
        }
        self.poll = poll
        self.instanceName = instanceName
        self.hostName = hostLabel + ".local"
        let context = Unmanaged.passUnretained(self).toOpaque()
        do {
            let client = try makeClient(avahi_threaded_poll_get(poll), { _, _, _ in }, context)
            self.client = client
            guard
                let group = avahi_entry_group_new(
                    client,
                    { _, state, context in
                        guard let context else { return }
                        let announcer = Unmanaged<Announcer>.fromOpaque(context).takeUnretainedValue()
                        announcer.condition.withLock {
                            announcer.groupState = state
                            announcer.condition.broadcast()
                        }
                    }, context)
            else {
                throw DiscoveryError(.daemonFailed, "the daemon refused an entry group: \(clientMessage())")
            }
            self.group = group
            for address in addresses {
                var parsed = AvahiAddress()
                guard avahi_address_parse(address.address, AvahiProtocol(AVAHI_PROTO_INET), &parsed) != nil
                else {
                    throw DiscoveryError(.noInterface, "\(address.address) is not an IPv4 address")
                }
                // NO_REVERSE: the machine's own host name already owns the address's reverse (PTR) record.
                try check(
                    avahi_entry_group_add_address(
                        group, address.index, AvahiProtocol(AVAHI_PROTO_INET),
                        AVAHI_PUBLISH_NO_REVERSE, hostName, &parsed), "an address record")
            }
            let strings = txt.map { strdup($0) }
            defer { strings.forEach { free($0) } }
            var pointers = strings.map { UnsafePointer($0) }
            let list = avahi_string_list_new_from_array(&pointers, Int32(pointers.count))
            defer { avahi_string_list_free(list) }
            try check(
                avahi_entry_group_add_service_strlst(
                    group, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_INET),
                    AvahiPublishFlags(rawValue: 0), instanceName, type, nil, hostName, port, list),
                "the service")
            try check(avahi_entry_group_commit(group), "the announcement")
            guard avahi_threaded_poll_start(poll) >= 0 else {
                throw DiscoveryError(.daemonFailed, "cannot start Avahi's event loop")
            }
            try waitUntilEstablished(timeoutSeconds: timeoutSeconds)
        } catch {
            stop()
            throw error
        }
    }

    private func clientMessage() -> String { avahiMessage(client.map { avahi_client_errno($0) } ?? 0) }

    private func check(_ result: Int32, _ what: String) throws {
        guard result >= 0 else {
            throw DiscoveryError(.daemonFailed, "the daemon refused \(what): \(avahiMessage(result))")
        }
    }

    private func waitUntilEstablished(timeoutSeconds: Double) throws {
        let deadline = Date(timeIntervalSinceNow: timeoutSeconds)
        try condition.withLock {
            while groupState != AVAHI_ENTRY_GROUP_ESTABLISHED {
                switch groupState {
                case AVAHI_ENTRY_GROUP_COLLISION:
                    throw DiscoveryError(
                        .collision,
                        "another host claimed the random name just announced; a fresh name every try did not help, "
                            + "so something on the network answers for every name: give payers this address "
                            + "(--to HOST:PORT) instead")
                case AVAHI_ENTRY_GROUP_FAILURE:
                    throw DiscoveryError(.daemonFailed, "the daemon could not announce the wallet")
                default:
                    guard condition.wait(until: deadline) else {
                        throw DiscoveryError(
                            .daemonFailed,
                            "the daemon did not establish the announcement within \(Int(timeoutSeconds)) s")
                    }
                }
            }
        }
    }

    /// Withdraws the announcement and frees everything; safe to call twice.
    public func stop() {
        guard !stopped else { return }
        stopped = true
        // Stopping the loop first: no callback runs while the objects it could touch are freed.
        avahi_threaded_poll_stop(poll)
        if let group { avahi_entry_group_free(group) }
        if let client { avahi_client_free(client) }
        group = nil
        client = nil
        avahi_threaded_poll_free(poll)
    }

    deinit { stop() }
}

/// Browses for one service type for a bounded time and resolves each instance found to an IPv4 address.
public enum Browser {
    /// The longest browse anyone may ask for.
    public static let secondsMax = 60.0
    /// The most services kept: a network that floods announcements cannot grow the list without bound.
    public static let serviceCountMax = 64

    /// The services of `type` that answer within `seconds`. It returns earlier once the daemon says all
    /// cached and queried answers are in ("all for now") and every resolution finished, but never before
    /// `minimumSeconds`, so a slow host's first answer has time to arrive.
    public static func browse(type: String, seconds: Double, minimumSeconds: Double = 1.5) throws -> [FoundService] {
        guard let poll = avahi_simple_poll_new() else {
            throw DiscoveryError(.daemonFailed, "cannot make Avahi's event loop")
        }
        defer { avahi_simple_poll_free(poll) }
        let session = BrowseSession()
        let context = Unmanaged.passUnretained(session).toOpaque()
        let client = try makeClient(avahi_simple_poll_get(poll), { _, _, _ in }, context)
        session.client = client
        defer {
            session.resolvers.forEach { avahi_service_resolver_free($0) }
            avahi_client_free(client)
        }
        guard
            let browser = avahi_service_browser_new(
                client, AvahiIfIndex(AVAHI_IF_UNSPEC), AvahiProtocol(AVAHI_PROTO_INET), type, nil,
                AvahiLookupFlags(rawValue: 0), browseCallback, context)
        else {
            throw DiscoveryError(
                .daemonFailed, "the daemon refused to browse: \(avahiMessage(avahi_client_errno(client)))")
        }
        defer { avahi_service_browser_free(browser) }
        let start = Date()
        let limit = min(max(seconds, 0.1), secondsMax)
        while true {
            let elapsed = Date().timeIntervalSince(start)
            if elapsed >= limit { break }
            if session.failed { throw DiscoveryError(.daemonFailed, "browsing failed: \(session.failure)") }
            if session.allForNow && session.resolvers.isEmpty && elapsed >= min(minimumSeconds, limit) { break }
            let waitMilliseconds = Int32(min(100, max(1, (limit - elapsed) * 1000)))
            guard avahi_simple_poll_iterate(poll, waitMilliseconds) == 0 else { break }
        }
        return session.found
    }
}

/// What one browse collects; touched only by the browsing thread (the simple poll runs on it).
private final class BrowseSession {
    var client: OpaquePointer?
    var resolvers: [OpaquePointer] = []
    var found: [FoundService] = []
    var allForNow = false
    var failed = false
    var failure = ""
}

private let browseCallback: AvahiServiceBrowserCallback = {
    _, interface, proto, event, name, type, domain, _, context in
    guard let context else { return }
    let session = Unmanaged<BrowseSession>.fromOpaque(context).takeUnretainedValue()
    switch event {
    case AVAHI_BROWSER_NEW:
        guard let client = session.client, session.found.count + session.resolvers.count < Browser.serviceCountMax
        else { return }
        if let resolver = avahi_service_resolver_new(
            client, interface, proto, name, type, domain, AvahiProtocol(AVAHI_PROTO_INET),
            AvahiLookupFlags(rawValue: 0), resolveCallback, context)
        {
            session.resolvers.append(resolver)
        }
    case AVAHI_BROWSER_REMOVE:
        // Withdrawn (its goodbye arrived): a receiver that left is not offered.
        if let name {
            let withdrawn = String(cString: name)
            session.found.removeAll { $0.instanceName == withdrawn }
        }
    case AVAHI_BROWSER_ALL_FOR_NOW:
        session.allForNow = true
    case AVAHI_BROWSER_FAILURE:
        session.failed = true
        session.failure = session.client.map { avahiMessage(avahi_client_errno($0)) } ?? "unknown"
    default:
        break
    }
}

private let resolveCallback: AvahiServiceResolverCallback = {
    resolver, _, _, event, name, _, _, hostName, address, port, txt, _, context in
    guard let context, let resolver else { return }
    let session = Unmanaged<BrowseSession>.fromOpaque(context).takeUnretainedValue()
    session.resolvers.removeAll { $0 == resolver }
    defer { avahi_service_resolver_free(resolver) }
    guard event == AVAHI_RESOLVER_FOUND, let name, let hostName, let address else { return }
    var text = [CChar](repeating: 0, count: Int(AVAHI_ADDRESS_STR_MAX))
    avahi_address_snprint(&text, text.count, address)
    var strings: [String] = []
    var entry = txt
    // A TXT record holds at most 256 strings of 255 bytes each; a wallet's has three short ones.
    while let current = entry, strings.count < 32 {
        let size = avahi_string_list_get_size(current)
        if let bytes = avahi_string_list_get_text(current), size <= 255 {
            strings.append(String(decoding: UnsafeBufferPointer(start: bytes, count: size), as: UTF8.self))
        }
        entry = avahi_string_list_get_next(current)
    }
    session.found.append(
        FoundService(
            instanceName: String(cString: name), hostName: String(cString: hostName),
            address: String(cString: text), port: port, txt: strings))
}
