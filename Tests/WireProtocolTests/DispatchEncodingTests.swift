import Foundation
import SwiftProtobuf
import Testing
@testable import WireProtocol

/// The direct encoder of DISPATCH (`DispatchEncoding`) against SwiftProtobuf's: the same bytes for random
/// dispatches (defaults, negative and unrecognised enum values, multi-byte varints, inputs, the epoch), and
/// a dispatch with unknown fields left to SwiftProtobuf. Seeded (`SplitMix`, MalformedTests.swift).
struct DispatchEncodingTests {

    func dispatch(_ rng: inout SplitMix) -> WireDispatch {
        var m = WireDispatch()
        m.records = (0..<Int.random(in: 0...5, using: &rng)).map { _ in
            var r = WireDispatchRecord()
            if Bool.random(using: &rng) { r.opID = FastCodecFuzz.text(&rng) }
            if Bool.random(using: &rng) { r.part = UInt32(truncatingIfNeeded: FastCodecFuzz.number(&rng)) }
            if Bool.random(using: &rng) { r.attempt = UInt32(truncatingIfNeeded: FastCodecFuzz.number(&rng)) }
            if Bool.random(using: &rng) { r.kind = FastCodecFuzz.text(&rng) }
            if Bool.random(using: &rng) { r.payload = Data(FastCodecFuzz.text(&rng).utf8) }
            if Bool.random(using: &rng) {
                r.inputs = (0..<Int.random(in: 1...3, using: &rng)).map { _ in
                    var i = WireInput()
                    if Bool.random(using: &rng) { i.dependencyID = FastCodecFuzz.text(&rng) }
                    if Bool.random(using: &rng) { i.result = Data(FastCodecFuzz.text(&rng).utf8) }
                    return i
                }
            }
            if Bool.random(using: &rng) { r.priority = Int32(truncatingIfNeeded: Int64(bitPattern: FastCodecFuzz.number(&rng))) }
            if Bool.random(using: &rng) { r.qos = WireQoS(rawValue: [0, 1, 3, 5, 9, -1, -300].randomElement(using: &rng)!) ?? .unspecified }
            if Bool.random(using: &rng) { r.name = FastCodecFuzz.text(&rng) }
            if Bool.random(using: &rng) { r.token = FastCodecFuzz.number(&rng) }
            return r
        }
        if Bool.random(using: &rng) { m.epoch = FastCodecFuzz.number(&rng) }
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
