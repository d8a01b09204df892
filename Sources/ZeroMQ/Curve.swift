import CZeroMQ

/// A CURVE public key: 32 raw bytes, written as 40 characters of Z85 (ZeroMQ RFC 32) in files and flags.
public struct CurvePublicKey: Sendable, Hashable, CustomStringConvertible {
    public let raw: [UInt8]
    public var z85: String { Z85.encode(raw) }
    public var description: String { z85 }

    public init(raw: [UInt8]) throws {
        guard raw.count == 32 else { throw CurveKeyError.malformed("a CURVE key is 32 bytes, got \(raw.count)") }
        self.raw = raw
    }

    /// A key written in Z85 (surrounding whitespace ignored).
    public init(z85 text: String) throws {
        let t = trimmed(text)
        guard t.utf8.count == 40 else {
            throw CurveKeyError.malformed("a CURVE public key is 40 Z85 characters, got \(t.utf8.count)")
        }
        guard let raw = Z85.decode(t) else { throw CurveKeyError.malformed("'\(t)' is not valid Z85") }
        try self.init(raw: raw)
    }
}

/// A CURVE key pair (32-byte raw keys) for the `curve*` socket options.
public struct CurveKeyPair: Sendable, Equatable {
    public let publicKey: [UInt8]
    public let secretKey: [UInt8]

    public var publicKeyValue: CurvePublicKey { try! CurvePublicKey(raw: publicKey) }

    /// A fresh key pair (`zmq_curve_keypair`); throws ENOTSUP if libzmq lacks CURVE.
    public static func generate() throws -> CurveKeyPair {
        var pub = [CChar](repeating: 0, count: 41), sec = [CChar](repeating: 0, count: 41)
        guard zmq_curve_keypair(&pub, &sec) == 0 else { throw ZMQError.last("zmq_curve_keypair") }
        return CurveKeyPair(publicKey: Z85.decode(nulTerminated(pub))!, secretKey: Z85.decode(nulTerminated(sec))!)
    }

    /// The pair of a secret key written in Z85; the public half is derived (`zmq_curve_public`).
    public init(secretZ85 text: String) throws {
        let t = trimmed(text)
        guard t.utf8.count == 40, let secret = Z85.decode(t) else {
            throw CurveKeyError.malformed("a CURVE secret key is 40 Z85 characters")
        }
        var pub = [CChar](repeating: 0, count: 41)
        guard zmq_curve_public(&pub, t) == 0 else { throw ZMQError.last("zmq_curve_public") }
        self.init(publicKey: Z85.decode(nulTerminated(pub))!, secretKey: secret)
    }

    init(publicKey: [UInt8], secretKey: [UInt8]) {
        self.publicKey = publicKey
        self.secretKey = secretKey
    }
}

public enum CurveKeyError: Error, Sendable, Equatable, CustomStringConvertible {
    case malformed(String)
    public var description: String {
        switch self { case .malformed(let why): why }
    }
}

/// Z85 (ZeroMQ RFC 32) for 32-byte keys, through libzmq's own codec.
public enum Z85 {
    public static func encode(_ bytes: [UInt8]) -> String {
        precondition(bytes.count % 4 == 0, "Z85 encodes multiples of 4 bytes")
        var out = [CChar](repeating: 0, count: bytes.count * 5 / 4 + 1)
        _ = zmq_z85_encode(&out, bytes, bytes.count)
        return nulTerminated(out)
    }

    /// nil when `text` is not Z85 or its length is not a multiple of 5.
    public static func decode(_ text: String) -> [UInt8]? {
        let n = text.utf8.count
        guard n > 0, n % 5 == 0 else { return nil }
        var out = [UInt8](repeating: 0, count: n * 4 / 5)
        return zmq_z85_decode(&out, text) == nil ? nil : out
    }
}

/// What a CURVE client needs: its own key pair and the server's public key (no trust on first use).
public struct CurveClientKeys: Sendable, Equatable {
    public var keys: CurveKeyPair
    public var server: CurvePublicKey
    public init(keys: CurveKeyPair, server: CurvePublicKey) {
        self.keys = keys
        self.server = server
    }
}

extension Socket {
    /// Makes this (not yet connected) socket a CURVE client of `server`.
    public func useCurveClient(_ c: CurveClientKeys) throws {
        try set(.curvePublicKey, c.keys.publicKey)
        try set(.curveSecretKey, c.keys.secretKey)
        try set(.curveServerKey, c.server.raw)
    }

    /// Makes this (not yet bound) socket a CURVE server. Install a `ZAPHandler` on the same context
    /// first: without one libzmq admits any client key.
    public func useCurveServer(_ keys: CurveKeyPair, domain: String) throws {
        try set(.curveServer, true)
        try set(.curveSecretKey, keys.secretKey)
        try set(.zapDomain, domain)
    }
}

/// `text` without leading and trailing ASCII whitespace (no Foundation in this module).
func trimmed(_ text: String) -> String {
    let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
    guard let first = text.firstIndex(where: { !isSpace($0) }), let last = text.lastIndex(where: { !isSpace($0) }) else { return "" }
    return String(text[first...last])
}

/// The text before the NUL of a buffer libzmq filled (Z85 is ASCII).
private func nulTerminated(_ buffer: [CChar]) -> String {
    String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
