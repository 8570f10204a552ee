import Foundation
import SecureCore
import Testing

@testable import SecurePeer

/// Issue 13, case 3: an external ranging source is read a line at a time under a deadline. A FIFO that sends
/// three lines and goes silent ends the measurement at the timeout (it hung the payer for 76 s before), and a
/// device that writes one line every 100 ms is shown line by line, not 256 bytes at a time.
@Suite("Ranging sources under a deadline", .serialized)
struct RangingDeadlineTests {
    static func fifo() throws -> String {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("ranging-\(UUID().uuidString)").path
        #expect(mkfifo(path, 0o600) == 0)
        return path
    }

    /// Writes `lines` to the FIFO, `pause` seconds apart, then holds it open (silent) for `hold` seconds.
    static func writer(_ path: String, lines: [String], pause: Double, hold: Double) -> Thread {
        let thread = Thread {
            let descriptor = open(path, O_WRONLY)
            guard descriptor >= 0 else { return }
            for line in lines {
                _ = line.withCString { write(descriptor, $0, strlen($0)) }
                Thread.sleep(forTimeInterval: pause)
            }
            Thread.sleep(forTimeInterval: hold)
            close(descriptor)
        }
        thread.start()
        return thread
    }

    @Test func aStalledSourceEndsAtTheDeadline() throws {
        let path = try Self.fifo()
        defer { unlink(path) }
        _ = Self.writer(path, lines: ["400\n", "410\n", "405\n"], pause: 0.01, hold: 10)
        let start = Date()
        var shown: [UInt32] = []
        #expect(throws: RangingError.self) {
            _ = try RangingConfiguration.external(path: path).samples(timeoutSeconds: 2) { shown.append($0) }
        }
        let elapsed = Date().timeIntervalSince(start)
        #expect(elapsed >= 1.9 && elapsed < 4, "the timeout fired after \(elapsed) s")
        #expect(shown == [400, 410, 405], "the three readings were shown as they came")
    }

    @Test func oneLineAtATimeIsShownAsItArrives() throws {
        let path = try Self.fifo()
        defer { unlink(path) }
        let lines = (0..<RangingConfiguration.sampleCount).map { "\(400 + $0)\n" }
        _ = Self.writer(path, lines: lines, pause: 0.1, hold: 0)
        let start = Date()
        var times: [Double] = []
        let (_, samples) = try RangingConfiguration.external(path: path).samples(timeoutSeconds: 10) { _ in
            times.append(Date().timeIntervalSince(start))
        }
        #expect(samples.count == RangingConfiguration.sampleCount)
        // The first reading is shown long before the last one arrives (1.5 s of writing).
        #expect((times.first ?? 99) < 0.5 && (times.last ?? 0) > 1.2, "\(times)")
    }
}
