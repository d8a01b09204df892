import Foundation

/// Values and damage for the tests of the direct codecs (ReportDecoding, SubmitDecoding, DispatchEncoding)
/// against SwiftProtobuf: texts that stress UTF-8 and length prefixes, numbers at varint boundaries, and
/// byte-level damage. Seeded through `SplitMix` (MalformedTests.swift).
enum FastCodecFuzz {
    static func text(_ rng: inout SplitMix) -> String {
        ["", "r/o1", "run-7/op-42", "é", "日本語の操作", "a\u{0}b", String(repeating: "x", count: 300)].randomElement(using: &rng)!
    }

    static func number(_ rng: inout SplitMix) -> UInt64 {
        [0, 1, 127, 128, 300, 16_383, 16_384, UInt64(UInt32.max), UInt64(UInt32.max) + 5, UInt64.max, rng.next()]
            .randomElement(using: &rng)!
    }

    /// A flipped byte, a cut, an inserted byte, or the message glued to itself.
    static func mutated(_ bytes: [UInt8], _ rng: inout SplitMix) -> [UInt8] {
        var b = bytes
        switch Int.random(in: 0...3, using: &rng) {
        case 0 where !b.isEmpty: b[Int.random(in: 0..<b.count, using: &rng)] = UInt8.random(in: 0...255, using: &rng)
        case 1 where !b.isEmpty: b.removeLast(Int.random(in: 1...b.count, using: &rng))
        case 2: b.insert(UInt8.random(in: 0...255, using: &rng), at: Int.random(in: 0...b.count, using: &rng))
        default: b += bytes
        }
        return b
    }
}
