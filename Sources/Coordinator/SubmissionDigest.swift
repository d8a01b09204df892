/// The digest that tells a retried SUBMIT (same key, same bytes) from a different one under a reused
/// key (PROTOCOL.md §5.13). FNV-1a over the body frame: not a defence against forgery (a client can
/// only confuse its own submissions), just a cheap, stable fingerprint.
enum SubmissionDigest {
    static func of(_ bytes: [UInt8]) -> UInt64 {
        var h: UInt64 = 0xcbf2_9ce4_8422_2325
        bytes.withUnsafeBufferPointer { buf in
            for b in buf { h = (h ^ UInt64(b)) &* 0x0000_0100_0000_01b3 }
        }
        return h
    }
}
