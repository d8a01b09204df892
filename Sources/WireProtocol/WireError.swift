/// Why a frame sequence is not a valid message. Decoding returns exactly one of
/// these for any bad input; the checks run in the order listed.
public enum WireError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Fewer than 2 frames, or a header frame shorter than 8 bytes.
    case truncated(frames: Int, headerBytes: Int)
    /// A header frame longer than 8 bytes.
    case badHeaderLength(Int)
    /// The header does not start with "OQ".
    case badSignature
    /// The header's version byte is not 1.
    case unsupportedVersion(UInt8)
    /// The header's command byte is not a defined command.
    case unknownCommand(UInt8)
    /// More than 2 frames (after the routing id, which the transport strips).
    case extraFrames(count: Int)
    /// Body frame over `WireLimits.maxBodySize`.
    case bodyTooLarge(size: Int, limit: Int)
    /// A repeated field at the top of the body has more than `WireLimits.maxBatchRecords` elements.
    case batchTooLarge(Command, count: Int, limit: Int)
    /// The body holds more than `WireLimits.maxElements` repeated elements in all.
    case tooManyElements(Command, count: Int, limit: Int)
    /// The body is not valid protobuf for the command's message.
    case malformedBody(Command, detail: String)
    /// A required field is absent, empty or zero.
    case missingField(Command, field: String)
    /// A field has a value outside its domain.
    case fieldOutOfRange(Command, field: String, detail: String)
    /// A string, bytes or nested list is over its limit.
    case fieldTooLarge(Command, field: String, size: Int, limit: Int)

    /// The ERROR code a coordinator replies with for this problem.
    public var code: WireErrorCode {
        switch self {
        case .truncated, .badHeaderLength, .badSignature, .extraFrames, .malformedBody: .malformed
        case .unsupportedVersion, .fieldOutOfRange(.hello, field: "protocol_version", _): .unsupportedVersion
        case .unknownCommand: .unknownCommand
        case .bodyTooLarge, .batchTooLarge, .tooManyElements, .fieldTooLarge: .tooLarge
        case .missingField, .fieldOutOfRange: .invalidArgument
        }
    }

    /// The command the bad message claimed to be, when the header got that far.
    public var command: Command? {
        switch self {
        case .batchTooLarge(let c, _, _), .tooManyElements(let c, _, _), .malformedBody(let c, _),
             .missingField(let c, _), .fieldOutOfRange(let c, _, _), .fieldTooLarge(let c, _, _, _):
            c
        default: nil
        }
    }

    public var description: String {
        switch self {
        case .truncated(let f, let h): "truncated message (\(f) frames, header \(h) bytes; need 2 frames and an 8-byte header)"
        case .badHeaderLength(let n): "header frame is \(n) bytes, expected 8"
        case .badSignature: "bad signature (header must start with \"OQ\")"
        case .unsupportedVersion(let v): "unsupported protocol version \(v) (this peer speaks \(WireVersion.current))"
        case .unknownCommand(let c): "unknown command 0x\(String(c, radix: 16))"
        case .extraFrames(let n): "\(n) frames, expected 2 (header, body)"
        case .bodyTooLarge(let s, let l): "body of \(s) bytes is over the limit of \(l)"
        case .batchTooLarge(let c, let n, let l): "\(c) batch of \(n) records is over the limit of \(l)"
        case .tooManyElements(let c, let n, let l): "\(c) holds \(n) repeated elements, over the limit of \(l)"
        case .malformedBody(let c, let d): "malformed \(c) body: \(d)"
        case .missingField(let c, let f): "\(c): missing required field \(f)"
        case .fieldOutOfRange(let c, let f, let d): "\(c): field \(f) out of range: \(d)"
        case .fieldTooLarge(let c, let f, let s, let l): "\(c): field \(f) has \(s), over the limit of \(l)"
        }
    }
}
