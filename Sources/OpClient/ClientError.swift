import WireProtocol

/// Why a request to the coordinator did not get a usable reply. Each case says what is known, so a
/// person can tell "nothing is listening there" from "it went away" from "that request is too big".
public enum ClientError: Error, CustomStringConvertible {
    case badEndpoint(String, String)
    /// No reply within the request's time. `connected`: a connection to the endpoint was up at the end
    /// (the coordinator is there but did not answer), else it could not be reached at all.
    case timeout(Command, String, connected: Bool)
    /// The coordinator answered with ERROR.
    case server(WireErrorCode, String)
    /// A reply this client cannot decode (the decoder's words); the request it answers, when known.
    case malformedReply(Command?, String)
    case unexpectedReply(Command, expected: String)
    /// The request breaks the protocol's limits or field rules (docs/PROTOCOL.md §6, §10): it was not
    /// sent. The text names the operation or field and the limit.
    case invalidRequest(Command, String)
    /// The connection closed after the request was sent and before its reply came: the coordinator
    /// stopped or restarted, or the network failed (no ZMTP heartbeat answered). The request may or may
    /// not have been carried out.
    case connectionLost(Command, String)
    /// The coordinator sent a frame this client refuses: over the protocol's 16 MiB frame limit (libzmq
    /// then closes the connection, so the reply never arrives). The request it answers and the size,
    /// when known.
    case replyTooLarge(Command?, String, size: Int?)
    /// The coordinator refused this client's key, or its lack of one (PROTOCOL.md §12): nothing was sent.
    case authenticationFailed(String, String)
    /// Connecting was refused again and again before any connection was made: nothing listens there.
    case unreachable(String)
    /// A TCP connection was made but the peer never completed the ZeroMQ handshake: another protocol
    /// (an HTTP server, such as the coordinator's dashboard port) listens there.
    case notACoordinator(String)

    public var description: String {
        switch self {
        case .badEndpoint(let e, let why):
            "cannot use coordinator endpoint '\(e)': \(why)"
        case .timeout(_, let e, let connected):
            connected
                ? "no reply from the coordinator at \(e): it is connected but did not answer in time (busy or hung?)"
                : "no reply from the coordinator at \(e): could not connect in time (is opcoord running there, and is the host reachable? set --coordinator or $OPCOORD)"
        case .unreachable(let e):
            "cannot reach the coordinator at \(e): connection refused (is opcoord running there, on that port? set --coordinator or $OPCOORD)"
        case .notACoordinator(let e):
            "\(e): not an opqueue coordinator (is it the HTTP port? the coordinator's default is 7600): it accepted the connection but never answered the ZeroMQ handshake"
        case .server(let code, let text):
            "coordinator refused the request (\(code)): \(text)"
        case .malformedReply(let c, let why):
            "\(c.map { "the coordinator's reply to \($0)" } ?? "a message from the coordinator") is malformed: \(why)"
        case .unexpectedReply(let c, let expected):
            "unexpected reply \(c) (expected \(expected))"
        case .invalidRequest(let c, let why):
            "\(c) request not sent: \(why)"
        case .connectionLost(let c, let e):
            "lost the connection to the coordinator at \(e) while waiting for the reply to \(c) (it stopped or restarted, or the network failed); the request may or may not have been carried out"
        case .authenticationFailed(let e, let why):
            "authentication failed at \(e): \(why)"
        case .replyTooLarge(let c, let e, let size):
            (c.map { "the reply to \($0)" } ?? "a message") + " from the coordinator at \(e) is "
                + (size.map { "\(ByteCount.text($0)), " } ?? "")
                + "over the protocol's \(ByteCount.text(WireLimits.maxFrameSize)) frame limit; it was refused here"
                + (size == nil ? " (libzmq dropped it and closed the connection)" : "")
                + (c == .status ? "; ask for fewer operations or leave out results" : "")
        }
    }
}

/// Sizes as people read them: "1.5 MiB (1572864 bytes)", "16 MiB", "900 bytes".
enum ByteCount {
    static func text(_ n: Int) -> String {
        let mib = 1 << 20, kib = 1 << 10
        if n >= mib { return n % mib == 0 ? "\(n / mib) MiB" : "\(decimal(Double(n) / Double(mib))) MiB (\(n) bytes)" }
        if n >= kib { return n % kib == 0 ? "\(n / kib) KiB" : "\(decimal(Double(n) / Double(kib))) KiB (\(n) bytes)" }
        return "\(n) byte\(n == 1 ? "" : "s")"
    }

    /// One decimal, rounded down so 1 MiB + 1 byte never reads as "1.0" next to a 1 MiB limit.
    private static func decimal(_ x: Double) -> String {
        let tenths = Int((x * 10).rounded(.down))
        return "\(tenths / 10).\(tenths % 10)"
    }
}

/// A `WireError` about a request this client built, in the request's own terms: operations by id,
/// sizes in MiB. The decoder's wording names fields by path ("operations[3].payload"); a person
/// knows the operation's id.
enum RequestProblem {
    static func describe(_ error: WireError, in message: Message) -> String {
        let c = message.command
        switch error {
        case .bodyTooLarge(let size, let limit):
            let advice = switch c {
            case .submit: " (send fewer or smaller operations per SUBMIT)"
            case .status, .wait, .cancelOps, .setPriority, .watch: " (name fewer operations per request)"
            default: ""
            }
            return "request body of \(ByteCount.text(size)) or more is over the \(ByteCount.text(limit)) frame limit\(advice)"
        case .batchTooLarge(_, let count, let limit):
            // The pre-scan stops counting at limit + 1; the message knows the real length.
            switch message {
            case .submit(let m) where m.operations.count > limit:
                return "\(m.operations.count) operations in one request; the limit is \(limit)"
            case .submit(let m) where m.queues.count > limit:
                return "\(m.queues.count) queue settings in one request; the limit is \(limit)"
            default:
                return "\(idCount(message) ?? count) operation ids in one request; the limit is \(limit)"
            }
        case .tooManyElements(_, _, let limit):
            return "the request holds more than \(limit) list elements in all (operations, dependencies, tags, ids), the limit per message"
        case .fieldTooLarge(_, let field, let size, let limit):
            // Nested lists are counted by the pre-scan, which names them by path without an index.
            if field.contains(".") && !field.contains("[") { return list(field, limit, in: message) }
            let (name, isBytes) = subject(field, in: message)
            if isBytes { return "\(name) is \(ByteCount.text(size)); the limit is \(ByteCount.text(limit))" }
            return "\(name) is \(size) bytes of UTF-8; the limit is \(limit)"
        case .fieldOutOfRange(_, let field, let detail):
            return "\(subject(field, in: message).name) is out of range: \(detail)"
        case .missingField(_, let field):
            return "\(subject(field, in: message).name) is missing or empty"
        default:
            return error.description
        }
    }

    static func idCount(_ message: Message) -> Int? {
        switch message {
        case .status(let m): m.opIds.count
        case .wait(let m): m.opIds.count
        case .cancelOps(let m): m.opIds.count
        case .setPriority(let m): m.opIds.count
        case .watch(let m): m.opIds.count
        default: nil
        }
    }

    /// A nested list over its limit, e.g. "operations.after": the operation it belongs to, by id.
    static func list(_ path: String, _ limit: Int, in message: Message) -> String {
        let name = String(path.split(separator: ".").last ?? "")
        if case .submit(let s) = message, name == "after" || name == "requires",
           let o = s.operations.first(where: { (name == "after" ? $0.after : $0.requires).count > limit }) {
            let n = (name == "after" ? o.after : o.requires).count
            return "\(name) of operation '\(o.id)' has \(n) entries; the limit is \(limit)"
        }
        return "list \(path) has more than \(limit) entries, the limit"
    }

    /// "payload of operation 'big'" for "operations[3].payload"; whether the field holds bytes
    /// (payloads and results are measured in bytes, the rest in UTF-8 bytes or elements).
    static func subject(_ field: String, in message: Message) -> (name: String, isBytes: Bool) {
        let isBytes = field.hasSuffix("payload") || field.hasSuffix("result") || field.hasSuffix("succeeded")
        guard case .submit(let s) = message, field.hasPrefix("operations["),
              let close = field.firstIndex(of: "]"),
              let i = Int(field[field.index(field.startIndex, offsetBy: 11)..<close]),
              s.operations.indices.contains(i) else {
            return (field, isBytes)
        }
        var rest = field[field.index(after: close)...]
        if rest.hasPrefix(".") { rest = rest.dropFirst() }
        let id = s.operations[i].id
        let who = id.isEmpty ? "operation #\(i + 1) of the request" : "operation '\(id.count > 80 ? String(id.prefix(77)) + "..." : id)'"
        return (rest.isEmpty ? who : "\(rest) of \(who)", isBytes)
    }
}
