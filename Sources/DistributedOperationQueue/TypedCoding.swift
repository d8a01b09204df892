import Foundation

/// The wire encoding of typed inputs, outputs and failures: JSON (chosen by measurement and for
/// interop; docs/ARCHITECTURE.md, "Typed operations"). Written and read by `QuickJSONEncoder` and
/// `QuickJSONDecoder` where they can (most values; several times faster), else by Foundation's
/// `JSONEncoder` and `JSONDecoder`, whose errors are the ones reported.
enum TypedCoding: Sendable {
    /// Shared: JSONEncoder and JSONDecoder are thread-safe once configured (Sendable), and making one
    /// per value costs more than encoding a small one.
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes     // paths and URLs read as they are
        return encoder
    }()
    private static let decoder = JSONDecoder()

    static func encode<T: Encodable>(_ value: T) throws -> [UInt8] {
        if let bytes = QuickJSONEncoder.encode(value) { return bytes }
        return Array(try encoder.encode(value))
    }

    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        if let value = QuickJSONDecoder.decode(type, from: bytes) { return value }
        return try decoder.decode(type, from: Data(bytes))
    }

    /// Foundation's coders alone (tests and `apibench micro` compare against them).
    static func foundationEncode<T: Encodable>(_ value: T) throws -> [UInt8] { Array(try encoder.encode(value)) }
    static func foundationDecode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try decoder.decode(type, from: Data(bytes))
    }

    /// Where and why a value could not be decoded or encoded: (coding path, e.g. "items[2].side", detail).
    static func describe(_ error: any Error) -> (path: String, detail: String) {
        switch error {
        case DecodingError.typeMismatch(let type, let c):
            return (path(c.codingPath), "expected \(type): \(c.debugDescription)")
        case DecodingError.valueNotFound(let type, let c):
            return (path(c.codingPath), "expected \(type), found null: \(c.debugDescription)")
        case DecodingError.keyNotFound(let key, let c):
            return (path(c.codingPath + [key]), "required key '\(key.stringValue)' is missing")
        case DecodingError.dataCorrupted(let c):
            return (path(c.codingPath), c.debugDescription + (c.underlyingError.map { " (\($0))" } ?? ""))
        case EncodingError.invalidValue(let value, let c):
            return (path(c.codingPath), "cannot encode \(value): \(c.debugDescription)")
        default:
            return ("", String(describing: error))
        }
    }

    /// "items[2].side"; "" for the value itself.
    static func path(_ keys: [any CodingKey]) -> String {
        var out = ""
        for k in keys {
            if let i = k.intValue, k.stringValue == "Index \(i)" || k.stringValue == "\(i)" {
                out += "[\(i)]"
            } else {
                out += (out.isEmpty ? "" : ".") + k.stringValue
            }
        }
        return out
    }
}

/// The typed API's coders for `apibench micro` (ns per step); not API.
@_spi(Benchmarks) public enum TypedCodingSteps {
    public static func encode<T: Encodable>(_ value: T) throws -> [UInt8] { try TypedCoding.encode(value) }
    public static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T { try TypedCoding.decode(type, from: bytes) }
    public static func foundationEncode<T: Encodable>(_ value: T) throws -> [UInt8] { try TypedCoding.foundationEncode(value) }
    public static func foundationDecode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        try TypedCoding.foundationDecode(type, from: bytes)
    }
}
