import Foundation
import SwiftProtobuf
import Testing
@testable import WireProtocol

/// The direct decoder of SUBMIT (`SubmitDecoding`) against SwiftProtobuf's: equal messages for every
/// submission the fast path takes, and nothing taken that SwiftProtobuf refuses. Seeded (`SplitMix`,
/// MalformedTests.swift), so a failure names its case.
struct SubmitDecodingTests {

    func operation(_ rng: inout SplitMix) -> WireOperation {
        var o = WireOperation()
        if Bool.random(using: &rng) { o.id = FastCodecFuzz.text(&rng) }
        if Bool.random(using: &rng) { o.name = FastCodecFuzz.text(&rng) }
        if Bool.random(using: &rng) { o.queue = FastCodecFuzz.text(&rng) }
        if Bool.random(using: &rng) { o.kind = FastCodecFuzz.text(&rng) }
        if Bool.random(using: &rng) { o.payload = Data(FastCodecFuzz.text(&rng).utf8) }
        if Bool.random(using: &rng) { o.after = (0..<Int.random(in: 1...4, using: &rng)).map { _ in FastCodecFuzz.text(&rng) } }
        if Bool.random(using: &rng) { o.priority = Int32(truncatingIfNeeded: Int64(bitPattern: FastCodecFuzz.number(&rng))) }
        if Bool.random(using: &rng) { o.qos = WireQoS(rawValue: Int(Int32(truncatingIfNeeded: FastCodecFuzz.number(&rng)))) ?? .unspecified }
        if Bool.random(using: &rng) { o.parts = UInt32(truncatingIfNeeded: FastCodecFuzz.number(&rng)) }
        if Bool.random(using: &rng) { o.policy = WireDependencyPolicy(rawValue: Int.random(in: -2...5, using: &rng)) ?? .UNRECOGNIZED(9) }
        if Bool.random(using: &rng) { o.retries = UInt32(truncatingIfNeeded: FastCodecFuzz.number(&rng)) }
        if Bool.random(using: &rng) { o.lossRetries = UInt32(truncatingIfNeeded: FastCodecFuzz.number(&rng)) }
        if Bool.random(using: &rng) { o.timeoutUs = Int64(bitPattern: FastCodecFuzz.number(&rng)) }
        if Bool.random(using: &rng) { o.requires = (0..<Int.random(in: 1...3, using: &rng)).map { _ in FastCodecFuzz.text(&rng) } }
        if Bool.random(using: &rng) { o.barrier = true }
        if Bool.random(using: &rng) { o.retryDelayUs = Int64(bitPattern: FastCodecFuzz.number(&rng)) }
        if Bool.random(using: &rng) { o.retryDelayMaxUs = Int64(bitPattern: FastCodecFuzz.number(&rng)) }
        if Bool.random(using: &rng) { o.share = FastCodecFuzz.text(&rng) }
        if Bool.random(using: &rng) { o.concurrencyKey = FastCodecFuzz.text(&rng) }
        return o
    }

    func submit(_ rng: inout SplitMix) -> WireSubmit {
        var m = WireSubmit()
        for _ in 0..<Int.random(in: 0...2, using: &rng) where Int.random(in: 0...3, using: &rng) == 0 {
            var q = WireQueueSettings()
            q.name = FastCodecFuzz.text(&rng)
            if Bool.random(using: &rng) { q.maxConcurrent = Int32(truncatingIfNeeded: Int64(bitPattern: FastCodecFuzz.number(&rng))) }
            if Bool.random(using: &rng) { q.suspended = Bool.random(using: &rng) }
            if Bool.random(using: &rng) { q.fairness.keyLimit = UInt32(truncatingIfNeeded: FastCodecFuzz.number(&rng)) }
            m.queues.append(q)
        }
        m.operations = (0..<Int.random(in: 0...5, using: &rng)).map { _ in operation(&rng) }
        if Bool.random(using: &rng) { m.run = FastCodecFuzz.text(&rng) }
        if Bool.random(using: &rng) { m.append = true }
        if Bool.random(using: &rng) { m.submitter = FastCodecFuzz.text(&rng) }
        if Bool.random(using: &rng) { m.submissionKey = FastCodecFuzz.text(&rng) }
        return m
    }

    @Test func wellFormedSubmissionsDecodeAsSwiftProtobufDecodesThem() throws {
        var rng = SplitMix(seed: 3)
        for i in 0..<3_000 {
            let m = submit(&rng)
            let bytes = try [UInt8](m.serializedBytes() as [UInt8])
            #expect(SubmitDecoding.submit(bytes) == m, "case \(i): \(m)")
        }
    }

    @Test func damagedSubmissionsAreEitherDecodedAlikeOrLeftToSwiftProtobuf() throws {
        var rng = SplitMix(seed: 4)
        var taken = 0, left = 0
        for i in 0..<20_000 {
            let bytes = try FastCodecFuzz.mutated(submit(&rng).serializedBytes(), &rng)
            if let fast = SubmitDecoding.submit(bytes) {
                taken += 1
                #expect(fast == ReportDecodingTests.general(bytes) as WireSubmit?, "case \(i): \(bytes)")
            } else { left += 1 }
        }
        #expect(taken > 1_000 && left > 1_000, "the mutations exercise both paths: \(taken) taken, \(left) left")
    }

    @Test func whatTheFastPathLeavesIsNamed() {
        // An unknown field (a later version's), a known field with the wrong wire type, invalid UTF-8 in an
        // operation's id, a varint of 11 bytes, a length past the end: all left to SwiftProtobuf.
        #expect(SubmitDecoding.submit([0xA0, 0x06, 0x01]) == nil)                           // field 100
        #expect(SubmitDecoding.submit([0x20 | 2, 0x00]) == nil)                              // append as bytes
        #expect(SubmitDecoding.submit([0x12, 0x03, 0x0A, 0x01, 0xFF]) == nil)                // op id 0xFF
        #expect(SubmitDecoding.submit([0x20] + [UInt8](repeating: 0x80, count: 10) + [0x01]) == nil)
        #expect(SubmitDecoding.submit([0x12, 0x05, 0x0A]) == nil)
        #expect(SubmitDecoding.submit([0x12, 0x02, 0xA0, 0x06]) == nil, "an operation's unknown field")
        #expect(SubmitDecoding.submit([]) == WireSubmit(), "an empty body is an empty message")
    }

    /// Through the codec: a SUBMIT the fast path takes and one it leaves (an unknown field, which the
    /// general path discards) both arrive as the message sent.
    @Test func theCodecDecodesSubmissionsEitherWay() throws {
        var m = WireSubmit()
        var o = WireOperation()
        o.id = "a"; o.kind = "noop"; o.after = ["b", "c"]; o.priority = -4; o.lossRetries = 0
        m.operations = [o]
        m.run = "r"
        let frames = WireCodec.encode(.submit(m), requestID: 7)
        #expect(try WireCodec.decodeThrowing(frames).message == .submit(m))
        let unknown = frames[1] + [0xA0, 0x06, 0x01]   // field 100: not the fast path's
        #expect(SubmitDecoding.submit(unknown) == nil)
        #expect(try WireCodec.decodeThrowing([frames[0], unknown]).message == .submit(m))
    }
}
