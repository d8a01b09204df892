import Foundation

/// A JSON `Decoder` over a parsed `JSONTree`, 2–4× faster than `JSONDecoder` on small values
/// (docs/ARCHITECTURE.md, "Typed operations"). It answers only what it knows `JSONDecoder` answers
/// alike; at anything else — a type `JSONDecoder` special-cases (`Data`, `URL`, `Decimal`), a number
/// that needs converting (`1.0` as an `Int`, a `Float`), a missing key or a type mismatch — it throws
/// and remembers it did (`failed`), so `TypedCoding` decodes the bytes again with `JSONDecoder`, whose
/// value or precise error is the answer. (Remembered, not only thrown: a type's `init(from:)` may catch
/// the error and try something else, and must get `JSONDecoder`'s answer there too.)
final class QuickJSONDecoder {
    /// Set by every throw: the value decoded, if any, is not to be used.
    private(set) var failed = false

    struct Unsure: Error {}

    /// The value in `bytes`, or nil when `JSONDecoder` must say (see the type's comment).
    static func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) -> T? {
        guard let tree = JSONTree.parse(bytes) else { return nil }
        let state = QuickJSONDecoder()
        let value = try? state.decode(T.self, tree, path: [])
        return state.failed ? nil : value
    }

    fileprivate func unsure() -> Unsure { failed = true; return Unsure() }

    fileprivate func decode<T: Decodable>(_ type: T.Type, _ node: JSONTree, path: @autoclosure () -> [any CodingKey]) throws -> T {
        if let v = try primitive(T.self, node) { return v }
        let t = ObjectIdentifier(T.self)
        if t == ObjectIdentifier(Data.self) || t == ObjectIdentifier(URL.self) || t == ObjectIdentifier(Decimal.self) {
            throw unsure()
        }
        return try T(from: NodeDecoder(state: self, node: node, codingPath: path()))
    }

    /// The common scalars without their `init(from:)`; nil for any other type.
    /// (Metatype comparisons: failed `as?` casts cost more than the decoding.)
    private func primitive<T>(_ type: T.Type, _ node: JSONTree) throws -> T? {
        let t = ObjectIdentifier(T.self)
        if t == ObjectIdentifier(String.self) { return unsafeBitCast(try string(node), to: T.self) }
        if t == ObjectIdentifier(Int.self) { return unsafeBitCast(try integer(Int.self, node), to: T.self) }
        if t == ObjectIdentifier(Bool.self) { return unsafeBitCast(try bool(node), to: T.self) }
        if t == ObjectIdentifier(Double.self) { return unsafeBitCast(try double(node), to: T.self) }
        return nil
    }

    fileprivate func string(_ node: JSONTree) throws -> String {
        guard case .string(let s) = node else { throw unsure() }
        return s
    }

    fileprivate func bool(_ node: JSONTree) throws -> Bool {
        guard case .bool(let b) = node else { throw unsure() }
        return b
    }

    /// Plain integer text only (`-12`), in range.
    fileprivate func integer<I: FixedWidthInteger>(_ type: I.Type, _ node: JSONTree) throws -> I {
        guard case .number(let text) = node, !text.utf8.contains(where: { $0 == UInt8(ascii: ".") || $0 | 0x20 == UInt8(ascii: "e") }),
              I.isSigned || text.utf8.first != UInt8(ascii: "-"), let v = I(text) else { throw unsure() }
        return v
    }

    /// Finite, and not a non-zero text that underflowed to zero (JSONDecoder's call).
    fileprivate func double(_ node: JSONTree) throws -> Double {
        guard case .number(let text) = node, let v = Double(text), v.isFinite,
              v != 0 || !text.utf8.contains(where: { $0 >= UInt8(ascii: "1") && $0 <= UInt8(ascii: "9") }) else { throw unsure() }
        return v
    }
}

/// A `Decoder` for one node of the tree.
private final class NodeDecoder: Decoder {
    let state: QuickJSONDecoder
    let node: JSONTree
    let codingPath: [any CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    init(state: QuickJSONDecoder, node: JSONTree, codingPath: [any CodingKey]) {
        (self.state, self.node, self.codingPath) = (state, node, codingPath)
    }

    func container<Key: CodingKey>(keyedBy type: Key.Type) throws -> KeyedDecodingContainer<Key> {
        guard case .object(let members) = node else { throw state.unsure() }
        return KeyedDecodingContainer(Keyed<Key>(state: state, members: members, codingPath: codingPath))
    }

    func unkeyedContainer() throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = node else { throw state.unsure() }
        return Unkeyed(state: state, items: items, codingPath: codingPath)
    }

    func singleValueContainer() throws -> any SingleValueDecodingContainer { Single(state: state, node: node, codingPath: codingPath) }
}

private struct Keyed<Key: CodingKey>: KeyedDecodingContainerProtocol {
    let state: QuickJSONDecoder
    let members: [JSONTree.Member]
    let codingPath: [any CodingKey]
    /// Member positions by key, for large objects (dictionaries); small ones are searched.
    private let index: [String: Int]?

    init(state: QuickJSONDecoder, members: [JSONTree.Member], codingPath: [any CodingKey]) {
        (self.state, self.members, self.codingPath) = (state, members, codingPath)
        index = members.count <= 16 ? nil
            : Dictionary(members.indices.map { (members[$0].key, $0) }, uniquingKeysWith: { a, _ in a })
    }

    var allKeys: [Key] { members.compactMap { Key(stringValue: $0.key) } }
    func contains(_ key: Key) -> Bool { find(key) != nil }

    private func find(_ key: Key) -> JSONTree? {
        let name = key.stringValue
        if let index { return index[name].map { members[$0].value } }
        return members.first(where: { $0.key == name })?.value
    }
    /// A present, non-null member.
    private func node(_ key: Key) throws -> JSONTree {
        guard let v = find(key) else { throw state.unsure() }
        if case .null = v { throw state.unsure() }
        return v
    }

    func decodeNil(forKey key: Key) throws -> Bool {
        guard let v = find(key) else { throw state.unsure() }
        if case .null = v { return true }
        return false
    }
    func decode(_ t: Bool.Type, forKey key: Key) throws -> Bool { try state.bool(node(key)) }
    func decode(_ t: String.Type, forKey key: Key) throws -> String { try state.string(node(key)) }
    func decode(_ t: Double.Type, forKey key: Key) throws -> Double { try state.double(node(key)) }
    func decode(_ t: Float.Type, forKey key: Key) throws -> Float { throw state.unsure() }
    func decode(_ t: Int.Type, forKey key: Key) throws -> Int { try state.integer(t, node(key)) }
    func decode(_ t: Int8.Type, forKey key: Key) throws -> Int8 { try state.integer(t, node(key)) }
    func decode(_ t: Int16.Type, forKey key: Key) throws -> Int16 { try state.integer(t, node(key)) }
    func decode(_ t: Int32.Type, forKey key: Key) throws -> Int32 { try state.integer(t, node(key)) }
    func decode(_ t: Int64.Type, forKey key: Key) throws -> Int64 { try state.integer(t, node(key)) }
    func decode(_ t: UInt.Type, forKey key: Key) throws -> UInt { try state.integer(t, node(key)) }
    func decode(_ t: UInt8.Type, forKey key: Key) throws -> UInt8 { try state.integer(t, node(key)) }
    func decode(_ t: UInt16.Type, forKey key: Key) throws -> UInt16 { try state.integer(t, node(key)) }
    func decode(_ t: UInt32.Type, forKey key: Key) throws -> UInt32 { try state.integer(t, node(key)) }
    func decode(_ t: UInt64.Type, forKey key: Key) throws -> UInt64 { try state.integer(t, node(key)) }
    func decode<T: Decodable>(_ t: T.Type, forKey key: Key) throws -> T {
        try state.decode(t, node(key), path: codingPath + [key])
    }

    func nestedContainer<N: CodingKey>(keyedBy type: N.Type, forKey key: Key) throws -> KeyedDecodingContainer<N> {
        guard case .object(let m) = try node(key) else { throw state.unsure() }
        return KeyedDecodingContainer(Keyed<N>(state: state, members: m, codingPath: codingPath + [key]))
    }
    func nestedUnkeyedContainer(forKey key: Key) throws -> any UnkeyedDecodingContainer {
        guard case .array(let items) = try node(key) else { throw state.unsure() }
        return Unkeyed(state: state, items: items, codingPath: codingPath + [key])
    }
    func superDecoder() throws -> any Decoder { throw state.unsure() }
    func superDecoder(forKey key: Key) throws -> any Decoder { throw state.unsure() }
}

private struct Unkeyed: UnkeyedDecodingContainer {
    let state: QuickJSONDecoder
    let items: [JSONTree]
    let codingPath: [any CodingKey]
    private(set) var currentIndex = 0

    init(state: QuickJSONDecoder, items: [JSONTree], codingPath: [any CodingKey]) {
        (self.state, self.items, self.codingPath) = (state, items, codingPath)
    }

    var count: Int? { items.count }
    var isAtEnd: Bool { currentIndex >= items.count }

    /// The next non-null item, taken only when `read` succeeds.
    private mutating func next<T>(_ read: (QuickJSONDecoder, JSONTree) throws -> T) throws -> T {
        guard !isAtEnd else { throw state.unsure() }
        if case .null = items[currentIndex] { throw state.unsure() }
        let v = try read(state, items[currentIndex])
        currentIndex += 1
        return v
    }

    mutating func decodeNil() throws -> Bool {
        guard !isAtEnd else { throw state.unsure() }
        guard case .null = items[currentIndex] else { return false }
        currentIndex += 1
        return true
    }
    mutating func decode(_ t: Bool.Type) throws -> Bool { try next { try $0.bool($1) } }
    mutating func decode(_ t: String.Type) throws -> String { try next { try $0.string($1) } }
    mutating func decode(_ t: Double.Type) throws -> Double { try next { try $0.double($1) } }
    mutating func decode(_ t: Float.Type) throws -> Float { throw state.unsure() }
    mutating func decode(_ t: Int.Type) throws -> Int { try next { try $0.integer(t, $1) } }
    mutating func decode(_ t: Int8.Type) throws -> Int8 { try next { try $0.integer(t, $1) } }
    mutating func decode(_ t: Int16.Type) throws -> Int16 { try next { try $0.integer(t, $1) } }
    mutating func decode(_ t: Int32.Type) throws -> Int32 { try next { try $0.integer(t, $1) } }
    mutating func decode(_ t: Int64.Type) throws -> Int64 { try next { try $0.integer(t, $1) } }
    mutating func decode(_ t: UInt.Type) throws -> UInt { try next { try $0.integer(t, $1) } }
    mutating func decode(_ t: UInt8.Type) throws -> UInt8 { try next { try $0.integer(t, $1) } }
    mutating func decode(_ t: UInt16.Type) throws -> UInt16 { try next { try $0.integer(t, $1) } }
    mutating func decode(_ t: UInt32.Type) throws -> UInt32 { try next { try $0.integer(t, $1) } }
    mutating func decode(_ t: UInt64.Type) throws -> UInt64 { try next { try $0.integer(t, $1) } }
    mutating func decode<T: Decodable>(_ t: T.Type) throws -> T {
        let (path, index) = (codingPath, currentIndex)
        return try next { try $0.decode(t, $1, path: path + [IndexKey(index)]) }
    }

    mutating func nestedContainer<N: CodingKey>(keyedBy type: N.Type) throws -> KeyedDecodingContainer<N> {
        let path = codingPath + [IndexKey(currentIndex)]
        return try next { state, node in
            guard case .object(let m) = node else { throw state.unsure() }
            return KeyedDecodingContainer(Keyed<N>(state: state, members: m, codingPath: path))
        }
    }
    mutating func nestedUnkeyedContainer() throws -> any UnkeyedDecodingContainer {
        let path = codingPath + [IndexKey(currentIndex)]
        return try next { state, node in
            guard case .array(let items) = node else { throw state.unsure() }
            return Unkeyed(state: state, items: items, codingPath: path)
        }
    }
    mutating func superDecoder() throws -> any Decoder { throw state.unsure() }
}

private struct Single: SingleValueDecodingContainer {
    let state: QuickJSONDecoder
    let node: JSONTree
    let codingPath: [any CodingKey]

    /// The node, unless null.
    private var value: JSONTree {
        get throws {
            if case .null = node { throw state.unsure() }
            return node
        }
    }

    func decodeNil() -> Bool { if case .null = node { true } else { false } }
    func decode(_ t: Bool.Type) throws -> Bool { try state.bool(value) }
    func decode(_ t: String.Type) throws -> String { try state.string(value) }
    func decode(_ t: Double.Type) throws -> Double { try state.double(value) }
    func decode(_ t: Float.Type) throws -> Float { throw state.unsure() }
    func decode(_ t: Int.Type) throws -> Int { try state.integer(t, value) }
    func decode(_ t: Int8.Type) throws -> Int8 { try state.integer(t, value) }
    func decode(_ t: Int16.Type) throws -> Int16 { try state.integer(t, value) }
    func decode(_ t: Int32.Type) throws -> Int32 { try state.integer(t, value) }
    func decode(_ t: Int64.Type) throws -> Int64 { try state.integer(t, value) }
    func decode(_ t: UInt.Type) throws -> UInt { try state.integer(t, value) }
    func decode(_ t: UInt8.Type) throws -> UInt8 { try state.integer(t, value) }
    func decode(_ t: UInt16.Type) throws -> UInt16 { try state.integer(t, value) }
    func decode(_ t: UInt32.Type) throws -> UInt32 { try state.integer(t, value) }
    func decode(_ t: UInt64.Type) throws -> UInt64 { try state.integer(t, value) }
    func decode<T: Decodable>(_ t: T.Type) throws -> T { try state.decode(t, node, path: codingPath) }
}
