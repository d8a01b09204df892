import Foundation
import Synchronization
import ZeroMQ

/// The ZAP handler (ZeroMQ RFC 27) for the coordinator's context: libzmq asks it about every CURVE
/// handshake on the ROUTER and admits only keys in the allow file. It must be bound before the ROUTER
/// binds — a CURVE server without a ZAP handler admits any client key.
///
/// One thread: answers requests, and between them (every 250 ms) checks the allow file for changes.
final class ZAPServer: Sendable {
    static let endpoint = "inproc://zeromq.zap.01"
    private let stopping = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    /// Starts the thread and returns once its socket is bound.
    /// `waker` wakes the loop when the allow file changed, so revoked keys are dropped at once.
    init(context: Context, access: AccessControl, waker: Waker) throws {
        let bound = DispatchSemaphore(value: 0)
        let failure = BindFailure()
        let thread = Thread { [self] in
            defer { done.signal() }
            let socket: Socket
            do {
                socket = try Socket(context, type: .rep)
                try socket.bind(Self.endpoint)
            } catch {
                failure.error.withLock { $0 = error }
                bound.signal()
                return
            }
            bound.signal()
            let poller = Poller()
            poller.add(socket)
            while !stopping.load(ordering: .relaxed) {
                do {
                    try poller.poll(timeout: .milliseconds(250))
                    if poller.isReadable(0), let request = try socket.receiveMultipart(flags: .dontWait) {
                        try socket.sendMultipart(Self.answer(request, access))
                    }
                } catch let e as ZMQError where e.isTerminated {
                    break
                } catch {
                    // A malformed request cannot come from libzmq itself; keep serving.
                }
                if access.reloadIfChanged() { waker.wake() }
            }
            socket.close()
        }
        thread.name = "opcoord-zap"
        thread.start()
        bound.wait()
        if let error = failure.error.withLock({ $0 }) { throw error }
    }

    /// Stops the thread (before the context terminates).
    func stop() {
        guard !stopping.exchange(true, ordering: .relaxed) else { return }
        done.wait()
    }

    /// RFC 27: version, request id, domain, address, identity, mechanism, credentials → version, request
    /// id, status code, status text, user id, metadata.
    static func answer(_ r: [[UInt8]], _ access: AccessControl) -> [[UInt8]] {
        func reply(_ code: String, _ text: String, user: String = "") -> [[UInt8]] {
            [Array("1.0".utf8), r.count > 1 ? r[1] : [], Array(code.utf8), Array(text.utf8), Array(user.utf8), []]
        }
        guard r.count >= 6, r[0] == Array("1.0".utf8) else { return reply("500", "malformed ZAP request") }
        let address = String(decoding: r[3], as: UTF8.self)
        guard String(decoding: r[5], as: UTF8.self) == "CURVE", r.count >= 7, r[6].count == 32 else {
            access.refused("a \(String(decoding: r[5], as: UTF8.self)) handshake from \(address) (only CURVE is accepted)", key: "mechanism \(address)")
            return reply("400", "only CURVE is accepted")
        }
        let key = Z85.encode(r[6])
        guard access.admit(key: key, address: address) else { return reply("400", "unknown key") }
        return reply("200", "OK", user: key)
    }
}

private final class BindFailure: Sendable {
    let error = Mutex<(any Error)?>(nil)
}
