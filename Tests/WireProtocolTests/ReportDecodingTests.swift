import Foundation
import SwiftProtobuf
import Testing
@testable import WireProtocol

/// The direct decoders of STARTED and FINISHED (`ReportDecoding`) against SwiftProtobuf's: equal messages
/// for every report the fast path takes, and nothing taken that SwiftProtobuf refuses. Seeded (`SplitMix`,
/// MalformedTests.swift), so a failure names its case.
struct ReportDecodingTests {
    static func general<M: SwiftProtobuf.Message>(_ bytes: [UInt8]) -> M? {
        try? M(serializedBytes: bytes, partial: true, options: WireCodec.decodingOptions)
    }

    func finished(_ rng: inout SplitMix) -> WireFinished {
        var m = WireFinished()
        for _ in 0..<Int.random(in: 0...4, using: &rng) {
            var r = WireFinishedRecord()
            if Bool.random(using: &rng) { r.opID = FastCodecFuzz.text(&rng) }
            if Bool.random(using: &rng) { r.part = UInt32(truncatingIfNeeded: FastCodecFuzz.number(&rng)) }
            r.attempt = UInt32(truncatingIfNeeded: FastCodecFuzz.number(&rng))
            switch Int.random(in: 0...3, using: &rng) {
            case 0: r.outcome = .succeeded(Data(FastCodecFuzz.text(&rng).utf8))
            case 1: r.outcome = .failed(FastCodecFuzz.text(&rng))
            case 2: r.outcome = .cancelled(FastCodecFuzz.text(&rng))
            default: break
            }
            if Bool.random(using: &rng) { r.atUs = Int64(bitPattern: FastCodecFuzz.number(&rng)) }
            if Bool.random(using: &rng) { r.startedAtUs = Int64(bitPattern: FastCodecFuzz.number(&rng)) }
            if Bool.random(using: &rng) { r.stdoutTail = Data(FastCodecFuzz.text(&rng).utf8); r.stdoutDropped = FastCodecFuzz.number(&rng) }
            if Bool.random(using: &rng) { r.stderrTail = Data(FastCodecFuzz.text(&rng).utf8); r.stderrDropped = FastCodecFuzz.number(&rng) }
            if Bool.random(using: &rng) { r.token = FastCodecFuzz.number(&rng) }
            m.records.append(r)
        }
        if Bool.random(using: &rng) { m.credit = UInt32(truncatingIfNeeded: FastCodecFuzz.number(&rng)) }
        if Bool.random(using: &rng) { m.sentUs = Int64(bitPattern: FastCodecFuzz.number(&rng)) }
        return m
    }

    func started(_ rng: inout SplitMix) -> WireStarted {
        var m = WireStarted()
        for _ in 0..<Int.random(in: 0...4, using: &rng) {
            var p = WirePartRef()
            p.opID = FastCodecFuzz.text(&rng)
            p.part = UInt32(truncatingIfNeeded: FastCodecFuzz.number(&rng))
            p.attempt = UInt32(truncatingIfNeeded: FastCodecFuzz.number(&rng))
            if Bool.random(using: &rng) { p.atUs = Int64(bitPattern: FastCodecFuzz.number(&rng)) }
            if Bool.random(using: &rng) { p.token = FastCodecFuzz.number(&rng) }
            m.parts.append(p)
        }
        if Bool.random(using: &rng) { m.sentUs = Int64(bitPattern: FastCodecFuzz.number(&rng)) }
        return m
    }

    @Test func wellFormedReportsDecodeAsSwiftProtobufDecodesThem() throws {
        var rng = SplitMix(seed: 1)
        for i in 0..<3_000 {
            let f = finished(&rng)
            let fb = try [UInt8](f.serializedBytes() as [UInt8])
            #expect(ReportDecoding.finished(fb) == f, "case \(i): \(f)")
            let s = started(&rng)
            let sb = try [UInt8](s.serializedBytes() as [UInt8])
            #expect(ReportDecoding.started(sb) == s, "case \(i): \(s)")
        }
    }

    @Test func damagedReportsAreEitherDecodedAlikeOrLeftToSwiftProtobuf() throws {
        var rng = SplitMix(seed: 2)
        var taken = 0, left = 0
        for i in 0..<20_000 {
            let f = try FastCodecFuzz.mutated(finished(&rng).serializedBytes(), &rng)
            if let fast = ReportDecoding.finished(f) {
                taken += 1
                #expect(fast == Self.general(f) as WireFinished?, "case \(i): \(f)")
            } else { left += 1 }
            let s = try FastCodecFuzz.mutated(started(&rng).serializedBytes(), &rng)
            if let fast = ReportDecoding.started(s) {
                #expect(fast == Self.general(s) as WireStarted?, "case \(i): \(s)")
            }
        }
        #expect(taken > 1_000 && left > 1_000, "the mutations exercise both paths: \(taken) taken, \(left) left")
    }

    @Test func whatTheFastPathLeavesIsNamed() {
        // An unknown field (a later version's), a known field with the wrong wire type, invalid UTF-8,
        // a varint of 11 bytes, a length past the end: all left to SwiftProtobuf.
        #expect(ReportDecoding.finished([0xA0, 0x06, 0x01]) == nil)                  // field 100, varint
        #expect(ReportDecoding.finished([0x10 | 2, 0x00]) == nil)                     // credit as bytes
        #expect(ReportDecoding.finished([0x0A, 0x03, 0x0A, 0x01, 0xFF]) == nil)       // op_id 0xFF
        #expect(ReportDecoding.finished([0x10] + [UInt8](repeating: 0x80, count: 10) + [0x01]) == nil)
        #expect(ReportDecoding.started([0x0A, 0x05, 0x0A]) == nil)
        #expect(ReportDecoding.finished([]) == WireFinished(), "an empty body is an empty message")
    }
}
