import CZeroMQ

/// A CURVE key pair (32-byte raw keys) for the `curve*` socket options. Room for the security issue:
/// the transport only provides the options and key generation; key distribution and ZAP are not here.
public struct CurveKeyPair: Sendable, Equatable {
    public let publicKey: [UInt8]
    public let secretKey: [UInt8]

    /// A fresh key pair (`zmq_curve_keypair`); throws ENOTSUP if libzmq lacks CURVE.
    public static func generate() throws -> CurveKeyPair {
        var pub = [CChar](repeating: 0, count: 41), sec = [CChar](repeating: 0, count: 41)
        guard zmq_curve_keypair(&pub, &sec) == 0 else { throw ZMQError.last("zmq_curve_keypair") }
        return CurveKeyPair(publicKey: try z85Decode(pub), secretKey: try z85Decode(sec))
    }

    private static func z85Decode(_ text: [CChar]) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 32)
        guard zmq_z85_decode(&out, text) != nil else {
            throw ZMQError(errno: EINVAL, message: "invalid Z85 key", operation: "zmq_z85_decode")
        }
        return out
    }
}
