import Foundation
import SwiftProtobuf
import Testing
@testable import WireProtocol

/// The direct encoder of DISPATCH (`DispatchEncoding`) against SwiftProtobuf's: the same bytes for random
/// dispatches (defaults, negative and unrecognised enum values, multi-byte varints, inputs, the epoch), and
/// a dispatch with unknown fields left to SwiftProtobuf. Seeded (`SplitMix`, MalformedTests.swift).
struct DispatchEncodingTests {
    func text(_ rng: inout SplitMix) -> String {
        ["", "r/o1", "run-7/op-42", "é", "日本語の操作", "a\u{0}b", String(repeating: "x", count: 300)].randomElement(using: &rng)!
    }

    func number(_ rng: inout SplitMix) -> UInt64 {
        [0, 1, 127, 128, 300, 16_383, 16_384, UInt64(UInt32.max), UInt64.max, rng.next()].randomElement(using: &rng)!
    }

    func dispatch(_ rng: inout SplitMix) -> WireDispatch {
        var m = WireDispatch()
        m.records = (0..<Int.random(in: 0...5, using: &rng)).map { _ in
            var r = WireDispatchRecord()
            if Bool.random(using: &rng) { r.opID = text(&rng) }
            if Bool.random(using: &rng) { r.part = UInt32(truncatingIfNeeded: number(&rng)) }
            if Bool.random(using: &rng) { r.attempt = UInt32(truncatingIfNeeded: number(&rng)) }
            if Bool.random(using: &rng) { r.kind = text(&rng) }
            if Bool.random(using: &rng) { r.payload = Data(text(&rng).utf8) }
            if Bool.random(using: &rng) {
                r.inputs = (0..<Int.random(in: 1...3, using: &rng)).map { _ in
                    var i = WireInput()
                    if Bool.random(using: &rng) { i.dependencyID = text(&rng) }
                    if Bool.random(using: &rng) { i.result = Data(text(&rng).utf8) }
                    return i
                }
            }
            if Bool.random(using: &rng) { r.priority = Int32(truncatingIfNeeded: Int64(bitPattern: number(&rng))) }
            if Bool.random(using: &rng) { r.qos = WireQoS(rawValue: [0, 1, 3, 5, 9, -1, -300].randomElement(using: &rng)!) ?? .unspecified }
            if Bool.random(using: &rng) { r.name = text(&rng) }
            if Bool.random(using: &rng) { r.token = number(&rng) }
            return r
        }
        if Bool.random(using: &rng) { m.epoch = number(&rng) }
        return m
    }

    @Test func theBytesAreSwiftProtobufs() throws {
        var rng = SplitMix(seed: 6)
        for i in 0..<5_000 {
            let m = dispatch(&rng)
            let expected = try [UInt8](m.serializedBytes() as [UInt8])
            #expect(DispatchEncoding.body(m) == expected, "case \(i): \(m)")
        }
    }

    @Test func aDispatchWithUnknownFieldsIsLeftToSwiftProtobuf() throws {
        // A later version's field in a record: decoding keeps it only without the codec's discarding options.
        let bytes: [UInt8] = [0x0A, 0x06, 0x0A, 0x01, 0x61, 0xA0, 0x06, 0x01]   // op_id "a", field 100 = 1
        let withUnknown = try WireDispatch(serializedBytes: bytes, partial: true)
        #expect(!withUnknown.records[0].unknownFields.data.isEmpty)
        #expect(DispatchEncoding.body(withUnknown) == nil)
        #expect(WireCodec.body(of: .dispatch(withUnknown)) == bytes, "the general path keeps the field")
    }
}
