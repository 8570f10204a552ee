import Foundation

/// The local IPv4 addresses an announcement can point at.
public enum NetworkInterfaces {
    /// Every interface that is up, not loopback, and carries multicast, with its IPv4 addresses; only those
    /// equal to `only` when it is given (a receiver listening on one address announces that one).
    public static func multicastIPv4(only: String? = nil) -> [InterfaceAddress] {
        var first: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&first) == 0 else { return [] }
        defer { freeifaddrs(first) }
        var found: [InterfaceAddress] = []
        var current = first
        while let entry = current {
            defer { current = entry.pointee.ifa_next }
            let flags = Int32(entry.pointee.ifa_flags)
            guard flags & Int32(IFF_UP) != 0, flags & Int32(IFF_LOOPBACK) == 0, flags & Int32(IFF_MULTICAST) != 0,
                let socketAddress = entry.pointee.ifa_addr, socketAddress.pointee.sa_family == sa_family_t(AF_INET)
            else { continue }
            var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
            let address = socketAddress.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee.sin_addr }
            var copy = address
            guard inet_ntop(AF_INET, &copy, &text, socklen_t(text.count)) != nil else { continue }
            let dotted = String(cString: text)
            if let only, only != dotted { continue }
            let name = String(cString: entry.pointee.ifa_name)
            found.append(InterfaceAddress(name: name, index: Int32(if_nametoindex(name)), address: dotted))
        }
        return found
    }
}
