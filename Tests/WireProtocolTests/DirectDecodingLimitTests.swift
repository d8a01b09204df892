import Testing
@testable import WireProtocol

/// SUBMIT, STARTED and FINISHED are decoded directly without `StructureScan`'s walk first
/// (`WireCodec.decodeThrowing`). So the direct decoders must give up at every limit the scan enforces,
/// before building more, and the general path must then refuse the body as the scan always has. Each
/// case fails if a decoder goes on past its limit: the message would be decoded, not refused.
struct DirectDecodingLimitTests {
    /// A length-delimited field: tag (field, wire type 2), length, bytes.
    func field(_ number: Int, _ bytes: [UInt8]) -> [UInt8] { [UInt8(number << 3 | 2)] + varint(bytes.count) + bytes }
    func text(_ number: Int, _ s: String) -> [UInt8] { field(number, Array(s.utf8)) }

    /// An operation with an id and `after` entries (field 6) and `requires` entries (field 14).
    func operation(_ id: String, after: Int = 0, requires: Int = 0) -> [UInt8] {
        var o = text(1, id)
        for i in 0..<after { o += text(6, "d\(i % 10)") }
        for i in 0..<requires { o += text(14, "t\(i % 10)") }
        return field(2, o)
    }

    func decode(_ command: Command, _ body: [UInt8]) -> Result<Envelope, WireError> {
        WireCodec.decode([Header(command: command).bytes, body])
    }

    @Test func submitOperationsPastTheBatchLimit() {
        let atLimit = (0..<WireLimits.maxBatchRecords).flatMap { operation("o\($0)") }
        #expect(SubmitDecoding.submit(atLimit)?.operations.count == WireLimits.maxBatchRecords)
        let over = atLimit + operation("one-more")
        #expect(SubmitDecoding.submit(over) == nil)
        #expect(decode(.submit, over) == .failure(.batchTooLarge(.submit, count: WireLimits.maxBatchRecords + 1, limit: WireLimits.maxBatchRecords)))
    }

    @Test func submitDependencyListsPastTheirLimit() {
        let after = operation("o", after: WireLimits.maxBatchRecords + 1)
        #expect(SubmitDecoding.submit(after) == nil)
        #expect(decode(.submit, after) == .failure(.fieldTooLarge(.submit, field: "operations.after", size: WireLimits.maxBatchRecords + 1,
                                                                  limit: WireLimits.maxBatchRecords)))
        let requires = operation("o", requires: WireLimits.maxBatchRecords + 1)
        #expect(SubmitDecoding.submit(requires) == nil)
        #expect(decode(.submit, requires) == .failure(.fieldTooLarge(.submit, field: "operations.requires", size: WireLimits.maxBatchRecords + 1,
                                                                     limit: WireLimits.maxBatchRecords)))
    }

    /// 8,192 operations with 32 dependencies each: every list within its limit, 270,336 elements in all.
    @Test func submitPastTheElementBudget() {
        let dense = (0..<WireLimits.maxBatchRecords).flatMap { operation("n\($0)", after: 32) }
        #expect(SubmitDecoding.submit(dense) == nil)
        guard case .failure(.tooManyElements(.submit, _, WireLimits.maxElements)) = decode(.submit, dense) else {
            Issue.record("a SUBMIT over the element budget was not refused"); return
        }
        // 8,192 × 31 + 8,192 = 262,144 elements: exactly the budget, decoded directly.
        let full = (0..<WireLimits.maxBatchRecords).flatMap { operation("n\($0)", after: 31) }
        #expect(SubmitDecoding.submit(full)?.operations.count == WireLimits.maxBatchRecords)
    }

    @Test func reportsPastTheBatchLimit() {
        let record = field(1, text(1, "o") + [0x18, 0x01])   // op_id "o", attempt 1
        let finished = (0...WireLimits.maxBatchRecords).flatMap { _ in record }
        #expect(ReportDecoding.finished(Array(finished.dropLast(record.count)))?.records.count == WireLimits.maxBatchRecords)
        #expect(ReportDecoding.finished(finished) == nil)
        #expect(decode(.finished, finished) == .failure(.batchTooLarge(.finished, count: WireLimits.maxBatchRecords + 1, limit: WireLimits.maxBatchRecords)))
        let started = (0...WireLimits.maxBatchRecords).flatMap { _ in record }
        #expect(ReportDecoding.started(Array(started.dropLast(record.count)))?.parts.count == WireLimits.maxBatchRecords)
        #expect(ReportDecoding.started(started) == nil)
        #expect(decode(.started, started) == .failure(.batchTooLarge(.started, count: WireLimits.maxBatchRecords + 1, limit: WireLimits.maxBatchRecords)))
    }
}
