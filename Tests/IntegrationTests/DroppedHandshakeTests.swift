import ClusterTestSupport
import Foundation
import OpClient
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// libzmq drops a connection whose handshake failed with a protocol error (a mechanism mismatch: a client
/// without keys meeting a coordinator with them; or a peer that does not speak ZMTP's handshake) and never
/// reconnects it, so the DEALER has no connection left to queue into. A request sent after that must end
/// with an error, not wait for a connection for ever (CI of stop 36: `opctl cancel` without a key hung
/// 30 s in its first send: libzmq had dropped the connection before it).
@Suite(.serialized, .timeLimit(.minutes(1)))
struct DroppedHandshakeTests {
    /// A peer that fails the handshake after the mechanism check: the first request's polls let the socket
    /// learn that libzmq dropped the connection; the later ones must not block in their send (the second
    /// did before), and each ends within its own timeout.
    @Test func aRequestAfterLibzmqDroppedTheConnectionEndsWithinItsTimeout() throws {
        let peer = try GreetingPeer(mechanism: "NULL", then: GreetingPeer.unexpectedHello)
        defer { peer.stop() }
        let outcomes = try Self.requests(to: peer, count: 4, timeout: .milliseconds(300))
        for (text, took) in outcomes {
            // No reply (the send went into a connection libzmq then dropped), or — when even a fresh
            // connection was dropped before the send — not a coordinator: a clear error either way.
            #expect(text.contains("no reply from the coordinator") || text.contains("not an opqueue coordinator"), "\(text)")
            #expect(took < .seconds(2), "took \(took)")
        }
    }

    /// A keyed coordinator as a client without keys meets it: every request ends at once with the reason.
    @Test func requestsAfterAMechanismMismatchFailAtOnceWithTheReason() throws {
        let peer = try GreetingPeer(mechanism: "CURVE", then: [])
        defer { peer.stop() }
        for (text, took) in try Self.requests(to: peer, count: 3, timeout: .milliseconds(300)) {
            #expect(text.contains("authentication failed") && text.contains("requires keys"), "\(text)")
            #expect(took < .milliseconds(250), "took \(took)")
        }
    }

    /// `count` WORKERS requests, each with `timeout`, on one connection to `peer` made and left to fail its
    /// handshake first: what each ended with and how long it took. On a thread, so a request that never
    /// returns fails the test instead of hanging it.
    static func requests(to peer: GreetingPeer, count: Int, timeout: Duration) throws -> [(String, Duration)] {
        let outcome = Outcome()
        let done = DispatchSemaphore(value: 0)
        let endpoint = "tcp://127.0.0.1:\(peer.port)", closedByClient = peer.closedByClient
        Thread.detachNewThread {
            defer { done.signal() }
            do {
                let conn = try CoordinatorConnection(endpoint: endpoint, timeout: timeout, curve: nil)
                defer { conn.close() }
                // The peer sees our side close after the failed handshake: libzmq has dropped it by then.
                guard closedByClient.wait(timeout: .now() + 5) == .success else { throw ClusterError("the client never closed the connection") }
                for _ in 0..<count {
                    let started = ContinuousClock.now
                    var text = "a reply"
                    do { _ = try conn.request(.workers) } catch { text = "\(error)" }
                    outcome.append((text, ContinuousClock.now - started))
                }
            } catch { outcome.append(("\(error)", .zero)) }
        }
        try #require(done.wait(timeout: .now() + 10) == .success, "a request still waits after 10 s: \(outcome.all)")
        #expect(outcome.all.count == count, "\(outcome.all)")
        return outcome.all
    }
}

/// What each request on the thread ended with.
private final class Outcome: @unchecked Sendable {
    private let lock = NSLock()
    private var outcomes: [(String, Duration)] = []
    var all: [(String, Duration)] { lock.withLock { outcomes } }
    func append(_ outcome: (String, Duration)) { lock.withLock { outcomes.append(outcome) } }
}

/// A TCP peer on 127.0.0.1 that answers each connection with a ZMTP 3.0 greeting as a server for
/// `mechanism` (RFC 23/ZMTP) and then the bytes `then`, and reads until the other side closes. With
/// "CURVE" a client without keys finds the mismatch itself (no race with the peer closing first); with
/// "NULL" and an unexpected command it fails the handshake after the mechanism check.
final class GreetingPeer: @unchecked Sendable {
    let port: Int
    /// Signalled each time the client closes a connection.
    let closedByClient = DispatchSemaphore(value: 0)
    private let listener: Int32

    /// A HELLO command (a CURVE client's first command), which a NULL client does not expect.
    static let unexpectedHello: [UInt8] = [0x04, 6, 5] + Array("HELLO".utf8)

    init(mechanism: String, then: [UInt8]) throws {
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard listener >= 0 else { throw ClusterError("socket: \(errno)") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let fd = listener
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, len) == 0 && getsockname(fd, $0, &len) == 0 }
        }
        guard bound, listen(fd, 8) == 0 else { close(fd); throw ClusterError("bind/listen on 127.0.0.1:0: \(errno)") }
        port = Int(UInt16(bigEndian: addr.sin_port))
        var greeting = [UInt8](repeating: 0, count: 64)
        greeting[0] = 0xFF
        greeting[9] = 0x7F
        greeting[10] = 3   // version 3.0
        for (i, b) in mechanism.utf8.prefix(20).enumerated() { greeting[12 + i] = b }
        greeting[32] = 1   // as-server
        let bytes = greeting + then, closed = closedByClient
        Thread.detachNewThread {
            while true {
                let conn = accept(fd, nil, nil)
                guard conn >= 0 else { return }   // stopped
                _ = bytes.withUnsafeBytes { write(conn, $0.baseAddress, $0.count) }
                var buffer = [UInt8](repeating: 0, count: 256)
                while buffer.withUnsafeMutableBytes({ read(conn, $0.baseAddress, $0.count) }) > 0 {}
                close(conn)
                closed.signal()
            }
        }
    }

    /// Stops listening (a connection still open ends with the client's close).
    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}
