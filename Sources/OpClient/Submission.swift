import WireProtocol

// Idempotent submission (docs/PROTOCOL.md §5.13, §5.14): every SUBMIT carries a submission key of its
// own, and a SUBMIT whose reply could not come is sent again, byte for byte, once the coordinator is back.
// The coordinator applies a key once and answers a repeat with the same run and count and `duplicate`,
// so a batch that arrived before the connection broke is not added twice. opctl and the Swift API both
// submit through `submit(_:until:onRetry:)`.

extension CoordinatorConnection {
    /// A fresh submission key: 128 random bits as 32 hex digits.
    public static func newSubmissionKey() -> String {
        var rng = SystemRandomNumberGenerator()
        return [rng.next(), rng.next()].map { (v: UInt64) in
            let hex = String(v, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }

    /// `message` with a fresh submission key if it is a SUBMIT without one.
    public static func keyed(_ message: WireProtocol.Message) -> WireProtocol.Message {
        guard case .submit(var m) = message, m.submissionKey.isEmpty else { return message }
        m.submissionKey = newSubmissionKey()
        return .submit(m)
    }

    /// Sends SUBMIT `message` — with a fresh submission key unless it has one — and returns its reply
    /// (accepted or not; `duplicate` when it was a repeat of one already applied).
    ///
    /// Each send waits up to the request timeout for its reply. When the reply cannot come because the
    /// coordinator went away after the SUBMIT was sent (`connectionLost`, or no reply in time while the
    /// connection is down), `onRetry` is told, and if the coordinator is back by `deadline` (nil: the
    /// request timeout from now) the same encoded SUBMIT — same key, same request id — is sent again;
    /// else the last error is thrown. A coordinator that is connected but does not answer within the
    /// request timeout, or was never reached, gets the usual `timeout` (sending again would not help);
    /// an ERROR reply is `server`.
    public func submit(_ message: WireProtocol.Message, until deadline: ContinuousClock.Instant? = nil,
                       onRetry: (ClientError) -> Void = { _ in }) throws -> WireSubmitReply {
        precondition(message.command == .submit, "submit(_:) sends SUBMIT, not \(message.command)")
        let (id, frames) = try encode(Self.keyed(message))
        let deadline = deadline ?? .now + timeout
        defer { forget(id) }
        while true {
            try send(frames, id: id, command: .submit)
            var lost: ClientError
            do {
                if let reply = try reply(to: id, until: .now + timeout) {
                    guard case .submitReply(let r) = reply else {
                        throw ClientError.unexpectedReply(reply.command, expected: "SUBMIT-REPLY")
                    }
                    return r
                }
                lost = .timeout(.submit, endpoint, connected: link.isUp)
                guard !link.isUp && link.wasEverUp else { throw lost }
            } catch ClientError.connectionLost(let c, let e) {
                lost = .connectionLost(c, e)
            }
            guard ContinuousClock.now < deadline else { throw lost }
            onRetry(lost)
            guard try waitForLink(until: deadline) else { throw lost }
        }
    }
}
