/// A parsed JSON text, for `QuickJSONDecoder`: strict RFC 8259 (what `JSONDecoder` accepts by default,
/// or less — anything else is nil, and `JSONDecoder` reads it and says what is wrong).
enum JSONTree {
    case null
    case bool(Bool)
    /// The number's text, as it was written (converted when a type asks for it).
    case number(String)
    case string(String)
    case array([JSONTree])
    /// Members in order; no key twice.
    case object([Member])

    /// A struct, not a tuple: an array of tuples looked its metadata up at each allocation (perf).
    struct Member {
        var key: String
        var value: JSONTree
    }

    /// The tree of `bytes`, or nil when they are not strict JSON (or nest deeper than 512).
    static func parse(_ bytes: [UInt8]) -> JSONTree? {
        bytes.withUnsafeBufferPointer { buf in
            var p = Parser(buf: buf)
            guard let tree = p.value(depth: 0) else { return nil }
            p.skipSpace()
            return p.i == buf.count ? tree : nil
        }
    }

    private struct Parser {
        let buf: UnsafeBufferPointer<UInt8>
        var i = 0

        init(buf: UnsafeBufferPointer<UInt8>) { self.buf = buf }

        mutating func skipSpace() {
            while i < buf.count, buf[i] == 0x20 || buf[i] == 0x0A || buf[i] == 0x0D || buf[i] == 0x09 { i += 1 }
        }

        mutating func literal(_ word: StaticString) -> Bool {
            let n = word.utf8CodeUnitCount
            guard i + n <= buf.count else { return false }
            for k in 0..<n where buf[i + k] != word.utf8Start[k] { return false }
            i += n
            return true
        }

        mutating func value(depth: Int) -> JSONTree? {
            guard depth < 512 else { return nil }
            skipSpace()
            guard i < buf.count else { return nil }
            switch buf[i] {
            case UInt8(ascii: "{"): return object(depth: depth)
            case UInt8(ascii: "["): return array(depth: depth)
            case UInt8(ascii: "\""): return string().map(JSONTree.string)
            case UInt8(ascii: "t"): return literal("true") ? .bool(true) : nil
            case UInt8(ascii: "f"): return literal("false") ? .bool(false) : nil
            case UInt8(ascii: "n"): return literal("null") ? .null : nil
            default: return number()
            }
        }

        mutating func object(depth: Int) -> JSONTree? {
            i += 1
            var members: [Member] = []
            skipSpace()
            if i < buf.count, buf[i] == UInt8(ascii: "}") { i += 1; return .object(members) }
            while true {
                skipSpace()
                guard i < buf.count, buf[i] == UInt8(ascii: "\""), let key = string() else { return nil }
                skipSpace()
                guard i < buf.count, buf[i] == UInt8(ascii: ":") else { return nil }
                i += 1
                guard let v = value(depth: depth + 1) else { return nil }
                members.append(Member(key: key, value: v))
                skipSpace()
                guard i < buf.count else { return nil }
                if buf[i] == UInt8(ascii: ",") { i += 1; continue }
                guard buf[i] == UInt8(ascii: "}") else { return nil }
                i += 1
                // A key twice: JSONDecoder decides what that means.
                if members.count <= 16 {
                    for a in 1..<max(1, members.count) where members[..<a].contains(where: { $0.key == members[a].key }) { return nil }
                } else if Set(members.lazy.map(\.key)).count != members.count {
                    return nil
                }
                return .object(members)
            }
        }

        mutating func array(depth: Int) -> JSONTree? {
            i += 1
            var items: [JSONTree] = []
            skipSpace()
            if i < buf.count, buf[i] == UInt8(ascii: "]") { i += 1; return .array(items) }
            while true {
                guard let v = value(depth: depth + 1) else { return nil }
                items.append(v)
                skipSpace()
                guard i < buf.count else { return nil }
                if buf[i] == UInt8(ascii: ",") { i += 1; continue }
                guard buf[i] == UInt8(ascii: "]") else { return nil }
                i += 1
                return .array(items)
            }
        }

        /// At a `"`: the string, unescaped; nil for a control character, a bad escape, a lone
        /// surrogate or bytes that are not UTF-8.
        mutating func string() -> String? {
            i += 1
            let start = i
            var high: UInt8 = 0
            while i < buf.count, buf[i] != UInt8(ascii: "\""), buf[i] != UInt8(ascii: "\\"), buf[i] >= 0x20 { high |= buf[i]; i += 1 }
            guard i < buf.count else { return nil }
            if buf[i] == UInt8(ascii: "\"") {
                defer { i += 1 }
                let text = UnsafeBufferPointer(rebasing: buf[start..<i])
                // ASCII is UTF-8 as it is; validating cost 15 % of a small input's decoding (perf).
                return high < 0x80 ? String(decoding: text, as: UTF8.self) : String(validating: text, as: UTF8.self)
            }
            guard buf[i] == UInt8(ascii: "\\") else { return nil }
            var out = Array(buf[start..<i])
            while i < buf.count {
                let c = buf[i]
                i += 1
                switch c {
                case UInt8(ascii: "\""): return String(validating: out, as: UTF8.self)
                case 0..<0x20: return nil
                case UInt8(ascii: "\\"):
                    guard i < buf.count else { return nil }
                    let e = buf[i]
                    i += 1
                    switch e {
                    case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): out.append(e)
                    case UInt8(ascii: "b"): out.append(0x08)
                    case UInt8(ascii: "f"): out.append(0x0C)
                    case UInt8(ascii: "n"): out.append(0x0A)
                    case UInt8(ascii: "r"): out.append(0x0D)
                    case UInt8(ascii: "t"): out.append(0x09)
                    case UInt8(ascii: "u"):
                        guard var scalar = hex4() else { return nil }
                        if (0xD800..<0xDC00).contains(scalar) {
                            guard literal("\\u"), let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                        }
                        guard let u = Unicode.Scalar(scalar) else { return nil }
                        out.append(contentsOf: UTF8.encode(u)!)
                    default: return nil
                    }
                default: out.append(c)
                }
            }
            return nil
        }

        mutating func hex4() -> UInt32? {
            guard i + 4 <= buf.count else { return nil }
            var v: UInt32 = 0
            for _ in 0..<4 {
                let c = buf[i]
                i += 1
                let d: UInt8
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): d = c - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): d = c - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): d = c - UInt8(ascii: "A") + 10
                default: return nil
                }
                v = v << 4 | UInt32(d)
            }
            return v
        }

        /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`
        mutating func number() -> JSONTree? {
            let start = i
            func digits(_ p: inout Parser) -> Int {
                let s = p.i
                while p.i < p.buf.count, p.buf[p.i] >= UInt8(ascii: "0"), p.buf[p.i] <= UInt8(ascii: "9") { p.i += 1 }
                return p.i - s
            }
            if i < buf.count, buf[i] == UInt8(ascii: "-") { i += 1 }
            guard i < buf.count else { return nil }
            if buf[i] == UInt8(ascii: "0") { i += 1 } else { guard digits(&self) > 0 else { return nil } }
            if i < buf.count, buf[i] == UInt8(ascii: ".") {
                i += 1
                guard digits(&self) > 0 else { return nil }
            }
            if i < buf.count, buf[i] == UInt8(ascii: "e") || buf[i] == UInt8(ascii: "E") {
                i += 1
                if i < buf.count, buf[i] == UInt8(ascii: "+") || buf[i] == UInt8(ascii: "-") { i += 1 }
                guard digits(&self) > 0 else { return nil }
            }
            return .number(String(decoding: UnsafeBufferPointer(rebasing: buf[start..<i]), as: UTF8.self))
        }
    }
}
