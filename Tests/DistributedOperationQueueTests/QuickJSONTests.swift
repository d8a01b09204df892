@testable import DistributedOperationQueue
import Foundation
import Testing

/// The typed wire form's fast coders: whatever `QuickJSONEncoder` writes, `JSONDecoder` reads back as the
/// same value; whatever `QuickJSONDecoder` answers is what `JSONDecoder` answers; where either is unsure,
/// `TypedCoding` gives Foundation's value or its precise error.
@Suite struct QuickJSONTests {
    struct Inner: Codable, Equatable { var name: String; var tags: [String] }
    enum Mode: String, Codable { case fast, slow }
    struct Everything: Codable, Equatable {
        var i: Int, i8: Int8, i16: Int16, i32: Int32, i64: Int64
        var u: UInt, u8: UInt8, u16: UInt16, u32: UInt32, u64: UInt64
        var d: Double, b: Bool, s: String
        var none: Int?, some: String?
        var list: [Int], nested: Inner, nestedList: [Inner], mode: Mode
        var map: [String: Int], intKeys: [Int: String]
        var date: Date
    }
    static let everything = Everything(
        i: Int.min, i8: -8, i16: Int16.max, i32: -32, i64: Int64.max, u: UInt.max, u8: 255, u16: 16, u32: 32, u64: UInt64.max,
        d: 0.1, b: true, s: "quote \" slash / back \\ tab \t nl \n bell \u{07} é 😀",
        none: nil, some: "x", list: [1, -2, 0], nested: Inner(name: "n", tags: ["a", "b"]),
        nestedList: [Inner(name: "1", tags: []), Inner(name: "2", tags: ["c"])], mode: .slow,
        map: Dictionary(uniqueKeysWithValues: (0..<40).map { ("k\($0)", $0) }), intKeys: [1: "one", -2: "minus two"],
        date: Date(timeIntervalSinceReferenceDate: 12.5))

    /// Both directions through the fast coders, each checked against Foundation's.
    func roundTrips<T: Codable & Equatable>(_ value: T, fastEncode: Bool = true, fastDecode: Bool = true,
                                            sourceLocation: SourceLocation = #_sourceLocation) throws {
        let quick = QuickJSONEncoder.encode(value)
        #expect((quick != nil) == fastEncode, "fast encoding taken: \(quick != nil)", sourceLocation: sourceLocation)
        if let quick {
            #expect(try JSONDecoder().decode(T.self, from: Data(quick)) == value, sourceLocation: sourceLocation)
        }
        let foundation = try TypedCoding.foundationEncode(value)
        let decoded = QuickJSONDecoder.decode(T.self, from: foundation)
        #expect((decoded != nil) == fastDecode, "fast decoding taken: \(decoded != nil)", sourceLocation: sourceLocation)
        if let decoded { #expect(decoded == value, sourceLocation: sourceLocation) }
        #expect(try TypedCoding.decode(T.self, from: TypedCoding.encode(value)) == value, sourceLocation: sourceLocation)
    }

    @Test func commonShapesTakeTheFastPathBothWays() throws {
        try roundTrips(Self.everything)
        try roundTrips(5)
        try roundTrips("top-level string")
        try roundTrips([1.5, -0.0, 1e-5, 1e300, 123456789.125, Double.leastNonzeroMagnitude, Double.greatestFiniteMagnitude])
        try roundTrips(Optional<Int>.none)
        try roundTrips([Inner(name: "x", tags: [])])
    }

    @Test func theShellPayloadIsByteForByteJSONEncoders() throws {
        let value = ShellOperation(#"cat "$OPQ_INPUTS_DIR"/*"#)
        #expect(QuickJSONEncoder.encode(value) == (try TypedCoding.foundationEncode(value)))
    }

    enum Shape: Codable, Equatable { case circle(radius: Double), square(side: Int) }
    class Base: Codable { var a = 1 }
    final class Derived: Base, Equatable {
        var b = 2
        override init() { super.init() }
        required init(from decoder: any Decoder) throws {
            b = try decoder.container(keyedBy: K.self).decode(Int.self, forKey: .b)
            try super.init(from: decoder.container(keyedBy: K.self).superDecoder())
        }
        override func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: K.self)
            try c.encode(b, forKey: .b)
            try super.encode(to: c.superEncoder())
        }
        enum K: CodingKey { case b }
        static func == (x: Derived, y: Derived) -> Bool { x.a == y.a && x.b == y.b }
    }
    struct Blob: Codable, Equatable { var data: Data; var url: URL; var amount: Decimal }
    struct Small: Codable, Equatable { var f: Float }

    @Test func shapesJSONEncoderWritesItsOwnWayFallBack() throws {
        try roundTrips(Shape.circle(radius: 2), fastEncode: false)         // nested containers (read from a tree: fast)
        try roundTrips(Derived(), fastEncode: false, fastDecode: false)     // superEncoder, superDecoder
        try roundTrips(Blob(data: Data([1, 2, 3]), url: URL(string: "https://x.org/a")!, amount: Decimal(string: "1.25")!),
                       fastEncode: false, fastDecode: false)
        try roundTrips(Small(f: 0.1), fastDecode: false)                    // a Float is read by JSONDecoder
        // The fallback's bytes are JSONEncoder's own (Data as base64).
        #expect(String(decoding: try TypedCoding.encode(Blob(data: Data([1, 2, 3]), url: URL(string: "a:b")!, amount: 1)), as: UTF8.self)
                    .contains(#""data":"AQID""#))
    }

    /// An error from `TypedCoding.decode`, described as the typed API reports it.
    func decodingError<T: Decodable>(_ type: T.Type, _ json: String) -> String? {
        do { _ = try TypedCoding.decode(T.self, from: Array(json.utf8)); return nil } catch {
            let (path, detail) = TypedCoding.describe(error)
            return path + ": " + detail
        }
    }
    func foundationError<T: Decodable>(_ type: T.Type, _ json: String) -> String? {
        do { _ = try JSONDecoder().decode(T.self, from: Data(json.utf8)); return nil } catch {
            let (path, detail) = TypedCoding.describe(error)
            return path + ": " + detail
        }
    }

    @Test func decodingFailuresAreJSONDecodersPreciseErrors() throws {
        let cases: [String] = [
            #"{"name":"n"}"#,                        // key missing
            #"{"name":5,"tags":[]}"#,                // type mismatch
            #"{"name":null,"tags":[]}"#,             // null
            #"{"name":"n","tags":["a",7]}"#,         // inside a list
            #"{"name":"n","tags":[],"#,              // truncated
            #"{"name":"n","tags":[]} x"#,            // trailing bytes
            "[1]",                                   // not an object
            "",
        ]
        for json in cases {
            let mine = decodingError(Inner.self, json)
            #expect(mine != nil && mine == foundationError(Inner.self, json), "\(json): \(mine ?? "no error")")
        }
        #expect(decodingError(Inner.self, #"{"name":"n","tags":["a",7]}"#)?.hasPrefix("tags[1]: expected String") == true)
        #expect(decodingError(Everything.self, #"{"nested":{"name":3}}"#) == foundationError(Everything.self, #"{"nested":{"name":3}}"#))
        for json in ["300", "-1", "1.5", "1e400", "05", "\"5\""] {
            #expect(decodingError(UInt8.self, json) == foundationError(UInt8.self, json), "\(json)")
        }
    }

    /// Texts the fast decoder leaves to JSONDecoder (it is stricter, never different).
    @Test func unusualTextsAreJSONDecodersAnswer() throws {
        func same<T: Decodable & Equatable>(_ type: T.Type, _ json: String, bytes: [UInt8]? = nil,
                                            sourceLocation: SourceLocation = #_sourceLocation) {
            let bytes = bytes ?? Array(json.utf8)
            #expect(QuickJSONDecoder.decode(T.self, from: bytes) == nil, "\(json) is left to JSONDecoder", sourceLocation: sourceLocation)
            let mine = Result { try TypedCoding.decode(T.self, from: bytes) }
            let theirs = Result { try JSONDecoder().decode(T.self, from: Data(bytes)) }
            switch (mine, theirs) {
            case (.success(let a), .success(let b)): #expect(a == b, sourceLocation: sourceLocation)
            case (.failure(let a), .failure(let b)):
                #expect(TypedCoding.describe(a).detail == TypedCoding.describe(b).detail, sourceLocation: sourceLocation)
            default: Issue.record("\(json): \(mine) vs \(theirs)", sourceLocation: sourceLocation)
            }
        }
        same(Int.self, "1.0")
        same(Int.self, "1e2")
        same(Double.self, "1e-400")
        same([String: Int].self, #"{"a":1,"a":2}"#)
        same(String.self, #""\ud800""#)
        same(String.self, "\"\u{01}\"")
        same(String.self, "\"a")
        same(Int.self, "-")
        same(Inner.self, "not UTF-8", bytes: Array(#"{"name":""#.utf8) + [0xFF] + Array(#"","tags":[]}"#.utf8))
    }

    /// A type whose `init(from:)` catches an error and tries another reading gets JSONDecoder's reading.
    enum Flexible: Codable, Equatable {
        case int(Int), text(String)
        init(from decoder: any Decoder) throws {
            let c = try decoder.singleValueContainer()
            if let i = try? c.decode(Int.self) { self = .int(i) } else { self = .text(try c.decode(String.self)) }
        }
        func encode(to encoder: any Encoder) throws {
            var c = encoder.singleValueContainer()
            switch self { case .int(let i): try c.encode(i); case .text(let s): try c.encode(s) }
        }
    }

    @Test func aCaughtErrorStillGivesJSONDecodersValue() throws {
        for json in ["7", #""seven""#, "7.0", "true"] {
            let mine = try? TypedCoding.decode(Flexible.self, from: Array(json.utf8))
            #expect(mine == (try? JSONDecoder().decode(Flexible.self, from: Data(json.utf8))), "\(json)")
        }
        #expect(QuickJSONDecoder.decode(Flexible.self, from: Array("7.0".utf8)) == nil)
        #expect(QuickJSONDecoder.decode(Flexible.self, from: Array(#""seven""#.utf8)) == nil, "a caught error is remembered")
    }

    struct V1: Codable, Equatable { var side: Int }
    struct V2: Codable, Equatable { var side: Int; var format: String }
    struct V2Optional: Codable, Equatable { var side: Int; var format: String? }

    @Test func versionSkew() throws {
        // A field added on the sender: the reader ignores it (fast).
        #expect(QuickJSONDecoder.decode(V1.self, from: try TypedCoding.encode(V2(side: 3, format: "png"))) == V1(side: 3))
        // Added on the reader as optional: nil (fast); as required: JSONDecoder's error names the key.
        #expect(QuickJSONDecoder.decode(V2Optional.self, from: try TypedCoding.encode(V1(side: 3))) == V2Optional(side: 3, format: nil))
        #expect(decodingError(V2.self, #"{"side":3}"#) == "format: required key 'format' is missing")
    }

    @Test func nonFiniteNumbersAreJSONEncodersError() throws {
        #expect(QuickJSONEncoder.encode(Double.nan) == nil)
        #expect(throws: EncodingError.self) { try TypedCoding.encode([1, Double.infinity]) }
    }
}
