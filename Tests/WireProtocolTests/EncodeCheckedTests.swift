import Foundation
import Testing
@testable import WireProtocol

/// `WireCodec.encodeChecked`: what a sender checks before sending is what `decode` would refuse.
@Suite struct EncodeCheckedTests {
    private func op(_ id: String, payload: Int = 0, after: [String] = []) -> WireOperation {
        var o = WireOperation()
        o.id = id
        o.kind = "echo"
        o.payload = Data(count: payload)
        o.after = after
        return o
    }

    private func submit(_ ops: [WireOperation]) -> Message {
        var s = WireSubmit()
        s.operations = ops
        return .submit(s)
    }

    private func expect(_ message: Message, _ error: WireError, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(throws: error, sourceLocation: sourceLocation) { try WireCodec.encodeChecked(message) }
    }

    @Test func testAValidMessageEncodesAsUsualAndDecodes() throws {
        let m = submit([op("a", payload: 10), op("b", after: ["a"])])
        let frames = try WireCodec.encodeChecked(m, requestID: 7)
        #expect(frames == WireCodec.encode(m, requestID: 7))
        #expect(try WireCodec.decodeThrowing(frames) == Envelope(requestID: 7, m))
    }

    @Test func testFieldRules() {
        expect(submit([op("big", payload: WireLimits.maxPayloadSize + 1)]),
               .fieldTooLarge(.submit, field: "operations[0].payload", size: WireLimits.maxPayloadSize + 1, limit: WireLimits.maxPayloadSize))
        var s = WireStatus()
        s.opIds = [String(repeating: "x", count: WireLimits.maxIDLength + 1)]
        expect(.status(s), .fieldTooLarge(.status, field: "op_ids[0]", size: WireLimits.maxIDLength + 1, limit: WireLimits.maxIDLength))
    }

    /// Counts only the pre-scan sees: list lengths of requests, and all elements together.
    @Test func testElementCounts() {
        var s = WireStatus()
        s.opIds = (0...WireLimits.maxBatchRecords).map { "o\($0)" }
        expect(.status(s), .batchTooLarge(.status, count: WireLimits.maxBatchRecords + 1, limit: WireLimits.maxBatchRecords))
        // 8,192 operations with 32 dependencies each: 270,336 elements.
        let deps = (0..<32).map { "d\($0)" }
        let dense = submit((0..<WireLimits.maxBatchRecords).map { op("n\($0)", after: deps) })
        guard case .failure(.tooManyElements(.submit, _, WireLimits.maxElements)) = Result(catching: { () throws(WireError) in
            try WireCodec.encodeChecked(dense)
        }) else {
            Issue.record("dense graph accepted"); return
        }
    }

    /// Over 16 MiB: refused by a lower bound before anything is encoded (8,192 payloads of 1 MiB
    /// would otherwise be 8 GiB of encoding), and by the exact size just over the limit.
    @Test func testBodySize() {
        let many = submit((0..<17).map { op("p\($0)", payload: WireLimits.maxPayloadSize) })
        guard case .failure(.bodyTooLarge(let size, WireLimits.maxBodySize)) = Result(catching: { () throws(WireError) in
            try WireCodec.encodeChecked(many)
        }) else {
            Issue.record("17 MiB of payloads accepted"); return
        }
        #expect(size > 17 * WireLimits.maxPayloadSize)
        #expect(WireCodec.bodySizeLowerBound(many) == size, "refused before encoding")
        // Just over by the exact size: the largest payloads of 8,192 operations that the lower bound lets
        // through (it counts 2 bytes of tag and length per field; real ones take more).
        func ops(_ p: Int) -> Message { submit((0..<WireLimits.maxBatchRecords).map { op(String(format: "n%05d", $0), payload: p) }) }
        var p = WireLimits.maxBodySize / WireLimits.maxBatchRecords
        while WireCodec.bodySizeLowerBound(ops(p)) > WireLimits.maxBodySize { p -= 1 }
        let exact = ops(p)
        let encoded = WireCodec.body(of: exact).count
        #expect(encoded > WireLimits.maxBodySize)
        expect(exact, .bodyTooLarge(size: encoded, limit: WireLimits.maxBodySize))
        // And one under the limit passes.
        #expect(throws: Never.self) { try WireCodec.encodeChecked(ops(p - 8)) }
    }
}
