import Foundation

/// The wire encoding of typed inputs, outputs and failures: JSON (chosen by measurement and for
/// interop; docs/ARCHITECTURE.md, "Typed operations"). One encoder and decoder per thread would save
/// little: JSONEncoder is a small value-like class whose cost is the encoding itself.
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
        Array(try encoder.encode(value))
    }

    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
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
