import Foundation

/// The machine-readable last line of a typed operation's failure text (docs/HANDLERS.md, "Typed
/// operations"): `opq-typed/1 ` then one JSON object, after the human-readable text, e.g.
///
///     too small: 8 px
///     opq-typed/1 {"error":"failure","type":"ResizeError","value":{"tooSmall":{"side":8}}}
///
/// `error` is `failure` (a thrown `Failure`, encoded in `value`), `undecodable-input` (`path`,
/// `detail`: the worker could not decode the payload) or `output-too-large` (`size`, `limit`).
/// Last, because a failure text over the wire's limit keeps its end; a Python or shell side reads
/// the text as it is, or `json.loads` the line after the prefix.
struct TypedFailureLine: Codable, Equatable {
    static let prefix = "opq-typed/1 "

    enum Kind: String, Codable { case failure, undecodableInput = "undecodable-input", outputTooLarge = "output-too-large" }

    var error: Kind
    var type: String
    var path: String?
    var detail: String?
    var size: Int?
    var limit: Int?

    /// A line is kept well within the wire's text limit (64 KiB), so it survives with the text.
    static let maxLineBytes = 32 << 10

    // MARK: worker side

    /// The failure text of a thrown `Failure`: its description, then the line with it encoded. A
    /// value too large for a line is sent as text only (the client then sees `.failed`).
    static func failureText<F: Error & Encodable>(_ error: F) -> String {
        let text = String(describing: error)
        let type = String(describing: F.self)
        guard let value = try? TypedCoding.encode(error) else {
            return text + " (the \(type) could not be encoded to be sent)"
        }
        let head = TypedFailureLine(error: .failure, type: type)
        // `{"error":…,"type":…` + `,"value":` + value + `}`: the value is embedded as it was encoded.
        guard var line = try? TypedCoding.encode(head), line.last == UInt8(ascii: "}") else { return text }
        line.removeLast()
        line += Array(#","value":"#.utf8) + value + [UInt8(ascii: "}")]
        guard line.count <= maxLineBytes else {
            return text + " (the encoded \(type) is \(line.count) bytes, over the \(maxLineBytes) a failure can carry)"
        }
        return text + "\n" + prefix + String(decoding: line, as: UTF8.self)
    }

    static func undecodableInputText(type: String, path: String, detail: String) -> String {
        let at = path.isEmpty ? "" : " at '\(path)'"
        let text = "cannot decode the input of \(type)\(at): \(detail) (the worker's version of \(type) differs from the client's, or the payload is not a \(type))"
        return text + line(TypedFailureLine(error: .undecodableInput, type: type, path: path, detail: String(detail.prefix(4096))))
    }

    static func outputTooLargeText(type: String, size: Int, limit: Int) -> String {
        "the output of \(type) is \(size) bytes, over the limit of \(limit) bytes (return a path or a key to shared storage instead)"
            + line(TypedFailureLine(error: .outputTooLarge, type: type, size: size, limit: limit))
    }

    private static func line(_ l: TypedFailureLine) -> String {
        guard let bytes = try? TypedCoding.encode(l) else { return "" }
        return "\n" + prefix + String(decoding: bytes, as: UTF8.self)
    }

    // MARK: client side

    /// The line of a failure text and its JSON, when the text ends with one.
    static func parse(_ text: String) -> (line: TypedFailureLine, json: [UInt8])? {
        let last = text.split(separator: "\n", omittingEmptySubsequences: false).last ?? ""
        guard last.hasPrefix(prefix) else { return nil }
        let json = Array(last.dropFirst(prefix.count).utf8)
        guard let line = try? TypedCoding.decode(TypedFailureLine.self, from: json) else { return nil }
        return (line, json)
    }

    /// The human-readable text before the line.
    static func message(_ text: String) -> String {
        guard let r = text.range(of: "\n" + prefix, options: .backwards) else { return text }
        return String(text[..<r.lowerBound])
    }

    /// The encoded `value` of a `failure` line, decoded as `F`.
    static func decodeValue<F: Decodable>(_ type: F.Type, from json: [UInt8]) throws -> F {
        try TypedCoding.decode(FailureValue<F>.self, from: json).value
    }
}

/// The `value` of a `failure` line.
private struct FailureValue<F: Decodable>: Decodable { var value: F }
