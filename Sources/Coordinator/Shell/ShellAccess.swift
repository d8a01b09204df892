import Foundation
import SchedulerCore
import WireProtocol

/// The shell's side of access control (PROTOCOL.md §12): every message is checked against its sender's
/// key (the User-Id the ZAP handler gave the connection) before it reaches the core, and a reloaded
/// allow file drops the sessions of keys it no longer lists.
struct ShellAccess {
    var list: AllowList
    var generation: UInt64
    /// The key behind each worker session and each client, to find them when their key is revoked.
    var workerKeys: [UInt64: String] = [:]
    var clientKeys: [UInt64: String] = [:]
    /// The key name each worker number last registered with: status says who produced a result.
    var keyNameOfWorker: [UInt64: String] = [:]
    var denied: UInt64 = 0
}

extension CoordinatorShell {
    /// The sender's principal, or nil after answering a refusal (nothing else happens).
    mutating func authorize(_ envelope: Envelope, from routing: [UInt8], user: String?, inProcess: Bool) -> Principal? {
        guard let a = access else { return nil }
        let message = envelope.message
        // With CURVE every TCP connection passed the ZAP handler, which gives it a User-Id; only the
        // in-process HTTP side has none, and it may read (docs/HTTP.md "Access").
        let principal = user == nil && inProcess ? Principal.httpSide : user.flatMap { a.list.principal(key: $0) }
        guard let p = principal else {
            refuse(message, from: routing, requestID: envelope.requestID,
                   "authentication failed: key \(user.map { "\($0.prefix(8))…" } ?? "(none)") is no longer allowed", log: "revoked key \(user ?? "-")")
            return nil
        }
        let core = self.core
        let why = RequestAccess.denial(message, by: p,
            queueOf: { id, run in core.queueName(ofRef: id, in: run) },
            queuesOfRun: { core.queueNames(ofRun: $0) },
            existingQueue: { core.queueCounts($0) },
            queueFairness: { core.fairnessStatus($0)?.fairness })
        if let why {
            access?.denied += 1
            refuse(message, from: routing, requestID: envelope.requestID, why, log: "\(p.name) \(message.command)")
            return nil
        }
        return p
    }

    /// Remembers which key a session or client speaks with.
    mutating func noteKey(_ key: String, worker: UInt64? = nil, client: UInt64? = nil, name: String) {
        guard !key.isEmpty else { return }   // the HTTP side: no key to revoke
        if let worker {
            access?.workerKeys[worker] = key
            access?.keyNameOfWorker[WorkerName.number(worker)] = name
        }
        if let client, access?.clientKeys[client] != key { access?.clientKeys[client] = key }
    }

    private mutating func refuse(_ message: Message, from routing: [UInt8], requestID: UInt32, _ why: String, log: String) {
        if let held = logLimiter.admit("denied \(log)", now: now) {
            logger.warning("refused \(message.command) from peer \(hex(routing)): \(clipped(why))\(heldBack(held, "more like it not logged"))")
        }
        if case .hello = message {
            var r = WireReject()
            r.code = .unauthorized
            r.reason = why
            send(.reject(r), to: routing)
        } else {
            sendError(.unauthorized, why, requestID: requestID, command: message.command.rawValue, to: routing)
        }
    }

    /// Picks up a reloaded allow file: sessions of keys it dropped (or whose roles no longer allow what
    /// they do) end now — workers hear REJECT and their work runs elsewhere; watchers and waiters get an
    /// ERROR. Called once per loop pass; costs one atomic load when nothing changed.
    mutating func refreshAccess() {
        guard let control = config.access, var a = access,
              control.generation.load(ordering: .acquiring) != a.generation else { return }
        (a.list, a.generation) = control.current()
        for (w, key) in a.workerKeys {
            guard !(a.list.principal(key: key)?.has(.worker) ?? false) else { continue }
            a.workerKeys[w] = nil
            guard !workerLinks.isLost(w), peers.routing(ofWorker: w) != nil else { continue }
            var r = WireReject()
            r.code = .unauthorized
            r.reason = "authentication failed: this worker's key was revoked"
            send(.reject(r), toWorker: w)
            logger.warning("worker \(WorkerName.sessionText(w)) '\(clipped(workerLinks.info[w]?.name ?? "?"))' dropped: its key was revoked")
            feed(.workerLost(worker: w, reason: "its key was revoked"))
        }
        for (c, key) in a.clientKeys where a.list.principal(key: key) == nil {
            a.clientKeys[c] = nil
            let text = "authentication failed: this client's key was revoked"
            if let watch = clientBook.stream(of: c), let r = peers.routing(ofClient: c) {
                unwatch(c)
                sendError(.unauthorized, text, requestID: watch.requestID, command: Command.watch.rawValue, to: r)
            }
            for ref in clientBook.endWaits(ofClient: c) {
                replyError(.unauthorized, text, ref: ref, command: .wait)
            }
        }
        access = a
    }

    /// Drops the keys of clients the peer table forgot.
    mutating func forgetClientKeys() {
        guard let keys = access?.clientKeys, !keys.isEmpty else { return }
        for c in keys.keys where peers.routing(ofClient: c) == nil { access?.clientKeys[c] = nil }
    }
}
