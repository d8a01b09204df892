import SwiftProtobuf

/// Encodes messages to frames and decodes frames to messages.
///
/// Frames are the parts of one ZeroMQ multipart message *after* any routing id:
/// `[header (8 bytes), body (protobuf)]`. Decoding is total: every input yields
/// an `Envelope` or a `WireError`; sizes are checked before anything is parsed,
/// and every decoded message has passed `validate(_:)`.
public enum WireCodec {
    static let decodingOptions: BinaryDecodingOptions = {
        var o = BinaryDecodingOptions()
        o.discardUnknownFields = true   // forward compatibility without storing them
        o.messageDepthLimit = 16        // the schema nests 3 deep
        return o
    }()

    /// Frames for `message`. Does not validate (senders may call `validate(_:)`) and
    /// does not check limits: batch with `Batcher` to stay under them.
    public static func encode(_ message: Message, requestID: UInt32 = 0) -> [[UInt8]] {
        [Header(command: message.command, requestID: requestID).bytes, body(of: message)]
    }

    /// Body bytes alone (frame 1).
    public static func body(of message: Message) -> [UInt8] {
        switch message {
        case .hello(let m): serialize(m)
        case .welcome(let m): serialize(m)
        case .reject(let m): serialize(m)
        case .credit(let m): serialize(m)
        case .dispatch(let m): DispatchEncoding.body(m) ?? serialize(m)
        case .started(let m): serialize(m)
        case .progress(let m): serialize(m)
        case .finished(let m): serialize(m)
        case .cancel(let m): serialize(m)
        case .heartbeat: []
        case .disconnect(let m): serialize(m)
        case .submit(let m): serialize(m)
        case .submitReply(let m): serialize(m)
        case .cancelOps(let m): serialize(m)
        case .queue(let m): serialize(m)
        case .setPriority(let m): serialize(m)
        case .ack(let m): serialize(m)
        case .status(let m): serialize(m)
        case .statusReply(let m): serialize(m)
        case .why(let m): serialize(m)
        case .whyReply(let m): serialize(m)
        case .workers: []
        case .workersReply(let m): serialize(m)
        case .watch(let m): serialize(m)
        case .event(let m): serialize(m)
        case .wait(let m): serialize(m)
        case .waitReply(let m): serialize(m)
        case .error(let m): serialize(m)
        case .runs(let m): serialize(m)
        case .runsReply(let m): serialize(m)
        case .logs(let m): serialize(m)
        case .logsReply(let m): serialize(m)
        case .story(let m): serialize(m)
        case .storyReply(let m): serialize(m)
        case .ha(let m): serialize(m)
        case .haReply(let m): serialize(m)
        case .follow(let m): serialize(m)
        case .journal(let m): serialize(m)
        case .snapshot(let m): serialize(m)
        case .replicaAck(let m): serialize(m)
        case .promote: []
        }
    }

    private static func serialize<M: SwiftProtobuf.Message>(_ m: M) -> [UInt8] {
        // proto3 messages have no required fields and we use no `Any`, so binary
        // serialization cannot fail; an empty body would be caught by the receiver's validation.
        (try? m.serializedBytes(partial: true)) ?? []
    }

    /// Parses the header frame alone (cheap). A coordinator uses it after a failed
    /// `decode` to echo the request id and name the command in its ERROR reply.
    /// Nil when there is no 8-byte header with the "OQ" signature.
    public static func peekHeader(_ frames: [[UInt8]]) -> Header? {
        guard let h = frames.first, h.count == WireLimits.headerSize,
              h[0] == WireVersion.signature.0, h[1] == WireVersion.signature.1 else { return nil }
        var header = Header(version: h[2], command: .heartbeat, requestID: 0)
        header.commandCode = h[3]
        header.requestID = UInt32(h[4]) << 24 | UInt32(h[5]) << 16 | UInt32(h[6]) << 8 | UInt32(h[7])
        return header
    }

    /// Decodes one message. Never traps; see `WireError` for the order of checks.
    public static func decode(_ frames: [[UInt8]]) -> Result<Envelope, WireError> {
        do throws(WireError) {
            return .success(try decodeThrowing(frames))
        } catch {
            return .failure(error)
        }
    }

    /// `decode(_:)` with typed throws.
    public static func decodeThrowing(_ frames: [[UInt8]]) throws(WireError) -> Envelope {
        guard let h = frames.first, h.count >= WireLimits.headerSize else {
            throw .truncated(frames: frames.count, headerBytes: frames.first?.count ?? 0)
        }
        guard h.count == WireLimits.headerSize else { throw .badHeaderLength(h.count) }
        guard h[0] == WireVersion.signature.0, h[1] == WireVersion.signature.1 else { throw .badSignature }
        guard h[2] == WireVersion.current else { throw .unsupportedVersion(h[2]) }
        guard let command = Command(rawValue: h[3]) else { throw .unknownCommand(h[3]) }
        guard frames.count >= 2 else { throw .truncated(frames: frames.count, headerBytes: h.count) }
        guard frames.count == 2 else { throw .extraFrames(count: frames.count) }
        let body = frames[1]
        guard body.count <= WireLimits.maxBodySize else {
            throw .bodyTooLarge(size: body.count, limit: WireLimits.maxBodySize)
        }
        let message: Message
        if let direct = directlyDecoded(body, command: command) {
            // Within the scan's limits already: the direct decoders count as they go and give up (nil)
            // past any of them, leaving the body to the scan's precise refusal below.
            message = direct
        } else {
            try StructureScan.check(body, command: command)
            message = try parse(body, command: command)
        }
        try validate(message)
        let requestID = UInt32(h[4]) << 24 | UInt32(h[5]) << 16 | UInt32(h[6]) << 8 | UInt32(h[7])
        return Envelope(requestID: requestID, message)
    }

    /// SUBMIT, STARTED and FINISHED, the messages of every operation, decoded without SwiftProtobuf's
    /// generic calls and without the structure scan's extra walk (≈ 430 instructions per op); nil for any
    /// other command, and for a body the direct decoders leave to the general path.
    @inline(__always)
    private static func directlyDecoded(_ body: [UInt8], command: Command) -> Message? {
        switch command {
        case .submit: SubmitDecoding.submit(body).map { .submit($0) }
        case .finished: ReportDecoding.finished(body).map { .finished($0) }
        case .started: ReportDecoding.started(body).map { .started($0) }
        default: nil
        }
    }

    private static func parse(_ body: [UInt8], command: Command) throws(WireError) -> Message {
        do {
            switch command {
            case .hello: return .hello(try p(body))
            case .welcome: return .welcome(try p(body))
            case .reject: return .reject(try p(body))
            case .credit: return .credit(try p(body))
            case .dispatch: return .dispatch(try p(body))
            case .started: return .started(try p(body))
            case .progress: return .progress(try p(body))
            case .finished: return .finished(try p(body))
            case .cancel: return .cancel(try p(body))
            case .heartbeat: _ = try p(body) as WireHeartbeat; return .heartbeat
            case .disconnect: return .disconnect(try p(body))
            case .submit: return .submit(try p(body))
            case .submitReply: return .submitReply(try p(body))
            case .cancelOps: return .cancelOps(try p(body))
            case .queue: return .queue(try p(body))
            case .setPriority: return .setPriority(try p(body))
            case .ack: return .ack(try p(body))
            case .status: return .status(try p(body))
            case .statusReply: return .statusReply(try p(body))
            case .why: return .why(try p(body))
            case .whyReply: return .whyReply(try p(body))
            case .workers: _ = try p(body) as WireWorkers; return .workers
            case .workersReply: return .workersReply(try p(body))
            case .watch: return .watch(try p(body))
            case .event: return .event(try p(body))
            case .wait: return .wait(try p(body))
            case .waitReply: return .waitReply(try p(body))
            case .error: return .error(try p(body))
            case .runs: return .runs(try p(body))
            case .runsReply: return .runsReply(try p(body))
            case .logs: return .logs(try p(body))
            case .logsReply: return .logsReply(try p(body))
            case .story: return .story(try p(body))
            case .storyReply: return .storyReply(try p(body))
            case .ha: return .ha(try p(body))
            case .haReply: return .haReply(try p(body))
            case .follow: return .follow(try p(body))
            case .journal: return .journal(try p(body))
            case .snapshot: return .snapshot(try p(body))
            case .replicaAck: return .replicaAck(try p(body))
            case .promote: _ = try p(body) as WirePromote; return .promote
            }
        } catch {
            throw .malformedBody(command, detail: String(describing: error))
        }
    }

    @inline(__always)
    private static func p<M: SwiftProtobuf.Message>(_ body: [UInt8]) throws -> M {
        try M(serializedBytes: body, partial: true, options: decodingOptions)
    }
}
