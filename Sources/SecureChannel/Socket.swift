#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Every socket system call the channel makes, in one file, each return code checked where it is made.
/// The descriptor is non-blocking; every wait is a poll() with a deadline, so no call can hang.
final class Socket: @unchecked Sendable {
    private let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    deinit { _ = Glibc.close(descriptor) }

    private static func systemError(_ what: String) -> ChannelError {
        ChannelError(.transport, "\(what) failed: \(String(cString: strerror(errno))) (errno \(errno))")
    }

    private static func makeTCP() throws -> Socket {
        let descriptor = socket(
            AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
        guard descriptor >= 0 else { throw systemError("socket()") }
        return Socket(descriptor: descriptor)
    }

    /// An IPv4 address in dotted-quad form (no name lookup: a wallet is given its peer's address).
    private static func ipv4Address(_ host: String, port: UInt16) throws -> sockaddr_in {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        guard inet_pton(AF_INET, host, &address.sin_addr) == 1 else {
            throw ChannelError(.transport, "\"\(host)\" is not an IPv4 address in dotted-quad form")
        }
        return address
    }

    /// A listening socket on `host` (an IPv4 address); port 0 lets the kernel choose.
    static func listen(host: String, port: UInt16) throws -> (Socket, UInt16) {
        let socket = try makeTCP()
        var one: Int32 = 1
        guard setsockopt(socket.descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size)) == 0
        else {
            throw systemError("setsockopt(SO_REUSEADDR)")
        }
        var address = try ipv4Address(host, port: port)
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(socket.descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard bound == 0 else { throw systemError("bind(\(host):\(port))") }
        guard Glibc.listen(socket.descriptor, Int32(ChannelLimits.listenBacklogCountMax)) == 0 else {
            throw systemError("listen()")
        }
        var actual = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let named = withUnsafeMutablePointer(to: &actual) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket.descriptor, $0, &length) }
        }
        guard named == 0 else { throw systemError("getsockname()") }
        return (socket, UInt16(bigEndian: actual.sin_port))
    }

    /// Accepts one connection, waiting until the deadline; returns it with the peer's IPv4 address (dotted quad),
    /// which a listener uses to bound the connections one source may hold.
    func accept(deadline: Deadline) throws -> (Socket, String) {
        while true {
            try wait(for: Int16(POLLIN), deadline: deadline, what: "a connection")
            var peer = sockaddr_in()
            var length = socklen_t(MemoryLayout<sockaddr_in>.size)
            // accept4 is hidden behind _GNU_SOURCE in Glibc's module, so the flags are set with fcntl.
            let accepted = withUnsafeMutablePointer(to: &peer) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(descriptor, $0, &length) }
            }
            if accepted >= 0 {
                let socket = Socket(descriptor: accepted)
                guard fcntl(accepted, F_SETFD, FD_CLOEXEC) == 0,
                    fcntl(accepted, F_SETFL, fcntl(accepted, F_GETFL) | O_NONBLOCK) == 0
                else {
                    throw Socket.systemError("fcntl() on an accepted socket")
                }
                try socket.disableNagle()
                var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
                let named = inet_ntop(AF_INET, &peer.sin_addr, &text, socklen_t(text.count)) != nil
                return (socket, named ? String(cString: text) : "unknown")
            }
            if errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED { continue }
            throw Socket.systemError("accept()")
        }
    }

    /// Connects to host:port, waiting until the deadline.
    static func connect(host: String, port: UInt16, deadline: Deadline) throws -> Socket {
        var address = try ipv4Address(host, port: port)
        let socket = try makeTCP()
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(socket.descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if result != 0 {
            guard errno == EINPROGRESS || errno == EINTR else { throw systemError("connect(\(host):\(port))") }
            try socket.wait(for: Int16(POLLOUT), deadline: deadline, what: "the connection")
            var pending: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            guard getsockopt(socket.descriptor, SOL_SOCKET, SO_ERROR, &pending, &length) == 0 else {
                throw systemError("getsockopt(SO_ERROR)")
            }
            guard pending == 0 else {
                throw ChannelError(.transport, "connect(\(host):\(port)) failed: \(String(cString: strerror(pending)))")
            }
        }
        try socket.disableNagle()
        return socket
    }

    /// Handshake messages are small and each waits for an answer; Nagle's delay would add 40 ms a round.
    private func disableNagle() throws {
        var one: Int32 = 1
        guard setsockopt(descriptor, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size)) == 0
        else {
            throw Socket.systemError("setsockopt(TCP_NODELAY)")
        }
    }

    /// Writes all of `bytes`, waiting for room while the peer does not read.
    func sendAll(_ bytes: [UInt8], deadline: Deadline) throws {
        var offset = 0
        while offset < bytes.count {
            let written = bytes.withUnsafeBytes {
                send(descriptor, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if written > 0 {
                offset += written
            } else if written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                try wait(for: Int16(POLLOUT), deadline: deadline, what: "the peer to read (backpressure)")
            } else if written < 0 && errno == EINTR {
                continue
            } else if written < 0 && (errno == EPIPE || errno == ECONNRESET) {
                throw ChannelError(.closed, "the peer closed the connection")
            } else {
                throw Socket.systemError("send()")
            }
        }
    }

    /// Reads up to `count` bytes; an empty array means the peer closed its end.
    func receive(upTo count: Int, deadline: Deadline) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        while true {
            let read = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress!, count, 0) }
            if read >= 0 { return Array(buffer[0..<read]) }
            if errno == EAGAIN || errno == EWOULDBLOCK {
                try wait(for: Int16(POLLIN), deadline: deadline, what: "data")
            } else if errno == EINTR {
                continue
            } else if errno == ECONNRESET {
                return []
            } else {
                throw Socket.systemError("recv()")
            }
        }
    }

    /// Stops both directions; a poll on another thread wakes up. The descriptor is closed in deinit, so
    /// it cannot be reused while another thread still holds it.
    func shutdownBoth() { _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR)) }

    private func wait(for events: Int16, deadline: Deadline, what: String) throws {
        while true {
            let remaining = deadline.remainingSeconds
            guard remaining > 0 else { throw ChannelError(.timeout, "timed out waiting for \(what)") }
            var entry = pollfd(fd: descriptor, events: events, revents: 0)
            let milliseconds = Int32(min(remaining * 1000, Double(Int32.max)).rounded(.up))
            let ready = poll(&entry, 1, milliseconds)
            if ready > 0 { return }
            if ready == 0 { continue }
            if errno == EINTR { continue }
            throw Socket.systemError("poll()")
        }
    }
}
