#if canImport(Glibc)
import Glibc
#endif
import WireProtocol

/// Peers that do not read (PROTOCOL.md §13, "Slow readers"): what finds a peer's pipe full waits in
/// `backlog`, within the client's budget; a WATCH stream over it is ended with a notice.
extension CoordinatorLoop {
    /// Queues `frames` for `routing`, whose pipe is full or which has messages waiting. True: the
    /// message is held (or, for an ended stream's EVENT, not needed).
    func hold(_ frames: [[UInt8]], _ message: Message, to routing: [UInt8]) -> Bool {
        let kind: OutputBacklog.Kind
        switch peers.role(of: routing) {
        case .worker?:
            // A worker this far behind needs no heartbeat (it hears from us when it reads again).
            if case .heartbeat = message { return true }
            kind = .worker
        default:
            if case .event = message { kind = .event } else { kind = .reply }
        }
        let first = !backlog.holds(routing)
        if backlog.add(frames, kind: kind, to: routing) == .overBudget { endSlowStream(routing) }
        if first { logger.debug("peer \(hex(routing)) reads slower than it is sent to: holding its messages") }
        return true
    }

    /// The client at `routing` holds more than its budget: its stream ends (events dropped, the notice
    /// queued); replies still over the budget are dropped too (a client that never reads them).
    func endSlowStream(_ routing: [UInt8]) {
        guard case .client(let c)? = peers.role(of: routing) else { backlog.drop(routing); return }
        let held = backlog.queuedBytes(of: routing)
        let stream = shell.clientBook.stream(of: c)
        let notice = stream.map { s in
            [routing] + WireCodec.encode(.error(CoordinatorShell.errorReply(.busy, WireLimits.watchTooSlow, command: Command.watch.rawValue)),
                                         requestID: s.requestID)
        }
        let stillOver = backlog.endStream(of: routing, notice: notice)
        if stream != nil { shell.unwatch(c) }
        slowStreamsEnded += 1
        if stillOver { backlog.drop(routing) }
        if let suppressed = logLimiter.admit("slow reader", burst: 10, now: now) {
            let what = stream == nil ? "its replies dropped" : stillOver ? "its watch ended and its replies dropped" : "its watch ended (told: \(WireLimits.watchTooSlow))"
            logger.warning("client \(c) does not read what it is sent: \(held) bytes held for it (budget \(backlog.perClient), \(backlog.clientBytes) for all slow clients); \(what)\(heldBack(suppressed, "more slow clients not logged"))")
        }
    }

    /// Sends what waits for peers whose pipe has room again, oldest first; forgets peers that are gone.
    func drainBacklog() {
        guard backlog.freshQueues > 0 || now >= nextBacklogTry else { return }
        _ = try? socket.get(.events)   // so the pipes' room is up to date (see `send`)
        let (due, next) = backlog.due(now: now)
        // Blocked peers are tried on their back-off (those blocked now: in 1 ms), but the list is not
        // walked more than every 2 ms.
        nextBacklogTry = max(min(next, now + 1_000), now + 2_000)
        for r in due {
            guard let role = peers.role(of: r) else { backlog.drop(r); continue }
            while let item = backlog.first(of: r) {
                do {
                    guard try socket.sendMultipart(item.frames, flags: .dontWait) else {
                        backlog.blocked(r, now: now)
                        break
                    }
                    backlog.sentFirst(of: r)
                    if case .worker(let w) = role { shell.workerLinks.sent(to: w, now: now) }
                } catch {
                    backlog.drop(r)   // gone (EHOSTUNREACH)
                    if case .client(let c) = role { shell.unwatch(c) }
                    break
                }
            }
        }
    }

    /// Gives memory freed by peers that left back to the system (glibc keeps freed pages otherwise):
    /// checked every few seconds, done only after many streams ended or much was dropped.
    func releaseMemoryAfterSlowReaders() {
        backlog.forgetEndedStreams { peers.role(of: $0) == nil }
        let dropped = backlog.takeDropped()
        droppedSinceTrim += dropped
        let clients = peers.clientCount
        defer { clientsAtTrim = clients }
        guard slowStreamsEnded >= 64 || droppedSinceTrim >= 8 << 20 || clientsAtTrim - clients >= 64 else { return }
        slowStreamsEnded = 0
        droppedSinceTrim = 0
        _ = GlibcHeap.trim?(0)
    }
}
