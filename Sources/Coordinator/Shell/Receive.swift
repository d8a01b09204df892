import SchedulerCore
import WireProtocol

extension CoordinatorShell {
    /// One decoded message from `routing` (its whole body in `body`), from `principal` with keys (the
    /// loop authorized it: `authorize`). The loop handles leadership and replication messages itself.
    mutating func receive(_ envelope: Envelope, from routing: [UInt8], body: [[UInt8]], principal: Principal?) {
        let rid = envelope.requestID
        switch envelope.message {
        case .submit(let s) where !s.submissionKey.isEmpty:
            // A retry is recognised by its key and the exact bytes it carries (PROTOCOL.md §5.13).
            let client = peers.client(for: routing, now: now)
            if let p = principal { noteKey(p.key, client: client, name: p.name) }
            let key = SubmissionKey(key: s.submissionKey, digest: SubmissionDigest.of(body.last ?? []))
            clientRequest(envelope.message, ref: ClientRef(client: client, request: UInt64(rid)), key: key, principal: principal)
        case .hello(let h): workerHello(h, from: routing, principal: principal)
        case .credit, .started, .progress, .finished, .heartbeat, .disconnect:
            workerMessage(envelope.message, from: routing)
        case .submit, .cancelOps, .queue, .setPriority, .status, .why, .workers, .watch, .wait, .runs, .logs, .story:
            let client = peers.client(for: routing, now: now)
            if let p = principal { noteKey(p.key, client: client, name: p.name) }
            clientRequest(envelope.message, ref: ClientRef(client: client, request: UInt64(rid)), principal: principal)
        case .ha, .follow, .replicaAck, .promote:
            // The loop answers these (leadership, replication); a shell without one has no standbys.
            sendError(.unexpected, "\(envelope.message.command) is not served by this coordinator",
                      requestID: rid, command: envelope.message.command.rawValue, to: routing)
        case .welcome, .reject, .dispatch, .cancel, .submitReply, .ack, .statusReply, .whyReply,
             .workersReply, .event, .waitReply, .runsReply, .logsReply, .storyReply, .haReply, .error, .journal, .snapshot:
            sendError(.unexpected, "\(envelope.message.command) is sent by the coordinator, not to it",
                      requestID: rid, command: envelope.message.command.rawValue, to: routing)
        }
    }

    /// A message we could not decode: the sender gets an ERROR naming the problem; nothing else changes.
    mutating func reject(_ error: WireError, frames: [[UInt8]], from routing: [UInt8]) {
        let header = WireCodec.peekHeader(frames)
        if let suppressed = logLimiter.admit("malformed \(hex(routing)) \(error.code)", now: now) {
            logger.warning("rejected a malformed message from peer \(hex(routing)): \(clipped(error.description))\(heldBack(suppressed, "more like it not logged"))")
        }
        if header?.command == .hello {
            // A registration that fails the checks gets REJECT, so the worker stops instead of retrying.
            var r = WireReject()
            r.code = error.code
            r.reason = error.description
            send(.reject(r), to: routing)
            return
        }
        sendError(error.code, error.description, requestID: header?.requestID ?? 0,
                  command: header?.commandCode ?? 0, to: routing)
    }
}
