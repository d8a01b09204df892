import Foundation

/// A JSON `Encoder` for the common shape of typed inputs and outputs — structs of numbers, strings,
/// bools, optionals, arrays and dictionaries, nested — that writes bytes as it goes: 3–9× faster
/// than `JSONEncoder` on small values (docs/ARCHITECTURE.md, "Typed operations"). The bytes are JSON
/// that `JSONDecoder` (and any JSON reader) decodes to the same value.
///
/// It never guesses: a shape it does not write the way `JSONEncoder` would — `Data`, `URL`, `Decimal`
/// (special-cased by `JSONEncoder`), a non-finite float, nested or repeated containers (enums with
/// associated values), `superEncoder`, a key written twice — marks the encoding `unsupported`, and
/// `TypedCoding` encodes the value with `JSONEncoder` instead (so its errors stay `JSONEncoder`'s).
final class QuickJSONEncoder: Encoder {
    // One encoder per value, on one thread, never accessed overlapping: the dynamic exclusivity checks
    // of a class's stored properties were a quarter of its time (perf), hence `unchecked`.
    @exclusivity(unchecked) var bytes: [UInt8] = []
    /// Something was met that only `JSONEncoder` writes right: discard `bytes`.
    @exclusivity(unchecked) var unsupported = false
    @exclusivity(unchecked) private(set) var codingPath: [any CodingKey] = []
    var userInfo: [CodingUserInfoKey: Any] { [:] }
    /// The open container's serial (a container writes only while it is the innermost one).
    @exclusivity(unchecked) fileprivate var current = 0
    @exclusivity(unchecked) private var nextSerial = 0
    /// Whether the value being encoded asked for its container yet, and what closes it.
    @exclusivity(unchecked) private var claimed = false
    @exclusivity(unchecked) private var closer: UInt8?
    /// Keys written by the open keyed containers (to catch a key written twice).
    @exclusivity(unchecked) fileprivate var keys: [String] = []

    struct Unsupported: Error {}

    init() { bytes.reserveCapacity(64) }

    /// Encodes `value`, or returns nil when `JSONEncoder` must (see the type's comment).
    static func encode<T: Encodable>(_ value: T) -> [UInt8]? {
        // An `Int` output, the commonest: its digits, without an encoder.
        if ObjectIdentifier(T.self) == ObjectIdentifier(Int.self) { return Array(String(unsafeBitCast(value, to: Int.self)).utf8) }
        let e = QuickJSONEncoder()
        do { try e.encodeValue(value) } catch { return nil }
        return e.unsupported ? nil : e.bytes
    }

    // MARK: values

    fileprivate func encodeValue<T: Encodable>(_ value: T) throws {
        if try !writePrimitive(value) { try encodeComposite(value) }
    }

    /// Writes the common scalars without their `encode(to:)`; false for any other type.
    private func writePrimitive<T: Encodable>(_ value: T) throws -> Bool {
        // Metatype comparisons: a failed `as?` cast of a struct costs more than writing it.
        let t = ObjectIdentifier(T.self)
        if t == ObjectIdentifier(String.self) {
            writeString(unsafeBitCast(value, to: String.self))
        } else if t == ObjectIdentifier(Int.self) {
            writeInteger(unsafeBitCast(value, to: Int.self))
        } else if t == ObjectIdentifier(Bool.self) {
            write(unsafeBitCast(value, to: Bool.self))
        } else if t == ObjectIdentifier(Double.self) {
            try write(unsafeBitCast(value, to: Double.self))
        } else {
            return false
        }
        return true
    }

    /// A value that asks for a container: `{…}`, `[…]` or the one value of its single-value container.
    private func encodeComposite<T: Encodable>(_ value: T) throws {
        let t = ObjectIdentifier(T.self)
        if t == ObjectIdentifier(Data.self) || t == ObjectIdentifier(URL.self) || t == ObjectIdentifier(Decimal.self) {
            throw fail()
        }
        let (outerCurrent, outerClaimed, outerCloser, outerKeys) = (current, claimed, closer, keys.count)
        (claimed, closer) = (false, nil)
        defer {
            (current, claimed, closer) = (outerCurrent, outerClaimed, outerCloser)
            keys.removeSubrange(outerKeys...)
        }
        let start = bytes.count
        try value.encode(to: self)
        if !claimed {
            bytes.append(contentsOf: "{}".utf8)              // no container: JSONEncoder writes {}
        } else if let closer {
            bytes.append(closer)
        } else if bytes.count == start {
            throw fail()                                      // a single-value container left empty
        }
    }

    /// Claims the container of the value being encoded: its serial, or 0 (unsupported) when it has one.
    fileprivate func open(_ bracket: UInt8?, closer: UInt8?) -> Int {
        guard !claimed else { unsupported = true; return 0 }
        claimed = true
        self.closer = closer
        nextSerial += 1
        current = nextSerial
        if let bracket { bytes.append(bracket) }
        return current
    }

    fileprivate func fail() -> Unsupported { unsupported = true; return Unsupported() }

    fileprivate func writeInteger<I: FixedWidthInteger>(_ v: I) {
        if v == 0 { bytes.append(UInt8(ascii: "0")); return }
        if v < 0 { bytes.append(UInt8(ascii: "-")) }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)         // ≤ 20 digits, written backwards
        var n = v.magnitude
        var count = 0
        withUnsafeMutableBytes(of: &digits) { buf in
            while n != 0 {
                count += 1
                buf[24 - count] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: n % 10)
                n /= 10
            }
            bytes.append(contentsOf: buf[(24 - count)...])
        }
    }

    fileprivate func write(_ v: Bool) { bytes.append(contentsOf: v ? "true".utf8 : "false".utf8) }

    /// As `JSONEncoder` writes it: the shortest form that reads back the same, without a trailing ".0".
    fileprivate func write<F: BinaryFloatingPoint & LosslessStringConvertible>(_ v: F) throws {
        guard v.isFinite else { throw fail() }
        var s = v.description
        if s.hasSuffix(".0") { s.removeLast(2) }
        bytes += s.utf8
    }

    fileprivate func writeString(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        defer { bytes.append(UInt8(ascii: "\"")) }
        var s = s
        let plain = s.withUTF8 { utf8 in
            guard !utf8.contains(where: { $0 < 0x20 || $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "\\") }) else { return false }
            bytes.append(contentsOf: utf8)
            return true
        }
        if plain { return }
        for c in s.utf8 {
            switch c {
            case UInt8(ascii: "\""): bytes += [UInt8(ascii: "\\"), c]
            case UInt8(ascii: "\\"): bytes += [UInt8(ascii: "\\"), c]
            case 0x0A: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
            case 0x0D: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
            case 0x09: bytes += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
            case 0x00..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                bytes += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(c >> 4)], hex[Int(c & 15)]]
            default: bytes.append(c)
            }
        }
    }

    // MARK: Encoder

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
        KeyedEncodingContainer(Keyed<Key>(encoder: self, serial: open(UInt8(ascii: "{"), closer: UInt8(ascii: "}")), firstKey: keys.count, codingPath: codingPath))
    }

    func unkeyedContainer() -> any UnkeyedEncodingContainer {
        Unkeyed(encoder: self, serial: open(UInt8(ascii: "["), closer: UInt8(ascii: "]")), codingPath: codingPath)
    }

    func singleValueContainer() -> any SingleValueEncodingContainer {
        Single(encoder: self, serial: open(nil, closer: nil), codingPath: codingPath)
    }

    /// Encodes a nested value with `key` on the coding path.
    fileprivate func encodeNested<T: Encodable>(_ value: T, at key: any CodingKey, in path: [any CodingKey]) throws {
        if try writePrimitive(value) { return }
        let outer = codingPath
        codingPath = path + [key]
        defer { codingPath = outer }
        try encodeComposite(value)
    }

    // MARK: containers

    private struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
        let encoder: QuickJSONEncoder
        let serial: Int
        let firstKey: Int
        let codingPath: [any CodingKey]

        /// Writes `"key":` (and the comma before it) if this container may write now.
        private func key(_ key: Key) throws {
            guard serial != 0, encoder.current == serial else { throw encoder.fail() }
            let name = key.stringValue
            if encoder.keys.count > firstKey {
                guard !encoder.keys[firstKey...].contains(name) else { throw encoder.fail() }
                encoder.bytes.append(UInt8(ascii: ","))
            }
            encoder.keys.append(name)
            encoder.writeString(name)
            encoder.bytes.append(UInt8(ascii: ":"))
        }

        mutating func encodeNil(forKey k: Key) throws { try key(k); encoder.bytes.append(contentsOf: "null".utf8) }
        mutating func encode(_ v: Bool, forKey k: Key) throws { try key(k); encoder.write(v) }
        mutating func encode(_ v: String, forKey k: Key) throws { try key(k); encoder.writeString(v) }
        mutating func encode(_ v: Double, forKey k: Key) throws { try key(k); try encoder.write(v) }
        mutating func encode(_ v: Float, forKey k: Key) throws { try key(k); try encoder.write(v) }
        mutating func encode(_ v: Int, forKey k: Key) throws { try key(k); encoder.writeInteger(v) }
        mutating func encode(_ v: Int8, forKey k: Key) throws { try key(k); encoder.writeInteger(v) }
        mutating func encode(_ v: Int16, forKey k: Key) throws { try key(k); encoder.writeInteger(v) }
        mutating func encode(_ v: Int32, forKey k: Key) throws { try key(k); encoder.writeInteger(v) }
        mutating func encode(_ v: Int64, forKey k: Key) throws { try key(k); encoder.writeInteger(v) }
        mutating func encode(_ v: UInt, forKey k: Key) throws { try key(k); encoder.writeInteger(v) }
        mutating func encode(_ v: UInt8, forKey k: Key) throws { try key(k); encoder.writeInteger(v) }
        mutating func encode(_ v: UInt16, forKey k: Key) throws { try key(k); encoder.writeInteger(v) }
        mutating func encode(_ v: UInt32, forKey k: Key) throws { try key(k); encoder.writeInteger(v) }
        mutating func encode(_ v: UInt64, forKey k: Key) throws { try key(k); encoder.writeInteger(v) }
        mutating func encode<T: Encodable>(_ v: T, forKey k: Key) throws {
            try key(k)
            try encoder.encodeNested(v, at: k, in: codingPath)
            encoder.current = serial           // this container writes on
        }

        mutating func nestedContainer<N: CodingKey>(keyedBy: N.Type, forKey key: Key) -> KeyedEncodingContainer<N> {
            encoder.unsupported = true
            return KeyedEncodingContainer(Keyed<N>(encoder: encoder, serial: 0, firstKey: 0, codingPath: codingPath))
        }
        mutating func nestedUnkeyedContainer(forKey key: Key) -> any UnkeyedEncodingContainer {
            encoder.unsupported = true
            return Unkeyed(encoder: encoder, serial: 0, codingPath: codingPath)
        }
        mutating func superEncoder() -> any Encoder { encoder.unsupported = true; return encoder }
        mutating func superEncoder(forKey key: Key) -> any Encoder { encoder.unsupported = true; return encoder }
    }

    private struct Unkeyed: UnkeyedEncodingContainer {
        let encoder: QuickJSONEncoder
        let serial: Int
        let codingPath: [any CodingKey]
        private(set) var count = 0

        init(encoder: QuickJSONEncoder, serial: Int, codingPath: [any CodingKey]) {
            (self.encoder, self.serial, self.codingPath) = (encoder, serial, codingPath)
        }

        private mutating func next() throws {
            guard serial != 0, encoder.current == serial else { throw encoder.fail() }
            if count > 0 { encoder.bytes.append(UInt8(ascii: ",")) }
            count += 1
        }

        mutating func encodeNil() throws { try next(); encoder.bytes.append(contentsOf: "null".utf8) }
        mutating func encode(_ v: Bool) throws { try next(); encoder.write(v) }
        mutating func encode(_ v: String) throws { try next(); encoder.writeString(v) }
        mutating func encode(_ v: Double) throws { try next(); try encoder.write(v) }
        mutating func encode(_ v: Float) throws { try next(); try encoder.write(v) }
        mutating func encode(_ v: Int) throws { try next(); encoder.writeInteger(v) }
        mutating func encode(_ v: Int8) throws { try next(); encoder.writeInteger(v) }
        mutating func encode(_ v: Int16) throws { try next(); encoder.writeInteger(v) }
        mutating func encode(_ v: Int32) throws { try next(); encoder.writeInteger(v) }
        mutating func encode(_ v: Int64) throws { try next(); encoder.writeInteger(v) }
        mutating func encode(_ v: UInt) throws { try next(); encoder.writeInteger(v) }
        mutating func encode(_ v: UInt8) throws { try next(); encoder.writeInteger(v) }
        mutating func encode(_ v: UInt16) throws { try next(); encoder.writeInteger(v) }
        mutating func encode(_ v: UInt32) throws { try next(); encoder.writeInteger(v) }
        mutating func encode(_ v: UInt64) throws { try next(); encoder.writeInteger(v) }
        mutating func encode<T: Encodable>(_ v: T) throws {
            try next()
            try encoder.encodeNested(v, at: IndexKey(count - 1), in: codingPath)
            encoder.current = serial
        }

        mutating func nestedContainer<N: CodingKey>(keyedBy: N.Type) -> KeyedEncodingContainer<N> {
            encoder.unsupported = true
            return KeyedEncodingContainer(Keyed<N>(encoder: encoder, serial: 0, firstKey: 0, codingPath: codingPath))
        }
        mutating func nestedUnkeyedContainer() -> any UnkeyedEncodingContainer {
            encoder.unsupported = true
            return Unkeyed(encoder: encoder, serial: 0, codingPath: codingPath)
        }
        mutating func superEncoder() -> any Encoder { encoder.unsupported = true; return encoder }
    }

    private struct Single: SingleValueEncodingContainer {
        let encoder: QuickJSONEncoder
        let serial: Int
        let codingPath: [any CodingKey]
        private var written = false

        init(encoder: QuickJSONEncoder, serial: Int, codingPath: [any CodingKey]) {
            (self.encoder, self.serial, self.codingPath) = (encoder, serial, codingPath)
        }

        /// One value, while this container may write.
        private mutating func next() throws {
            guard serial != 0, encoder.current == serial, !written else { throw encoder.fail() }
            written = true
        }

        mutating func encodeNil() throws { try next(); encoder.bytes.append(contentsOf: "null".utf8) }
        mutating func encode(_ v: Bool) throws { try next(); encoder.write(v) }
        mutating func encode(_ v: String) throws { try next(); encoder.writeString(v) }
        mutating func encode(_ v: Double) throws { try next(); try encoder.write(v) }
        mutating func encode(_ v: Float) throws { try next(); try encoder.write(v) }
        mutating func encode(_ v: Int) throws { try next(); encoder.writeInteger(v) }
        mutating func encode(_ v: Int8) throws { try next(); encoder.writeInteger(v) }
        mutating func encode(_ v: Int16) throws { try next(); encoder.writeInteger(v) }
        mutating func encode(_ v: Int32) throws { try next(); encoder.writeInteger(v) }
        mutating func encode(_ v: Int64) throws { try next(); encoder.writeInteger(v) }
        mutating func encode(_ v: UInt) throws { try next(); encoder.writeInteger(v) }
        mutating func encode(_ v: UInt8) throws { try next(); encoder.writeInteger(v) }
        mutating func encode(_ v: UInt16) throws { try next(); encoder.writeInteger(v) }
        mutating func encode(_ v: UInt32) throws { try next(); encoder.writeInteger(v) }
        mutating func encode(_ v: UInt64) throws { try next(); encoder.writeInteger(v) }
        mutating func encode<T: Encodable>(_ v: T) throws {
            try next()
            try encoder.encodeValue(v)         // the same coding path: a single value is its value
            encoder.current = serial
        }
    }
}

/// The coding key of an array element (`[2]` in a path), as JSONEncoder's.
struct IndexKey: CodingKey {
    var stringValue: String { "Index \(index)" }
    var intValue: Int? { index }
    let index: Int
    init(_ index: Int) { self.index = index }
    init?(stringValue: String) { nil }
    init(intValue: Int) { index = intValue }
}
