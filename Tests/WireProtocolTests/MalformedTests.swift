import Foundation
import Testing
@testable import WireProtocol

@Suite struct MalformedTests {
    private let okHeader = Header(command: .credit).bytes
    private var okCreditBody: [UInt8] { WireCodec.encode(.credit({ var c = WireCredit(); c.credit = 1; return c }()))[1] }

    private func expect(_ frames: [[UInt8]], _ error: WireError, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(WireCodec.decode(frames) == .failure(error), sourceLocation: sourceLocation)
    }

    @Test func testFraming() {
        expect([], .truncated(frames: 0, headerBytes: 0))
        expect([[0x4F, 0x51, 1]], .truncated(frames: 1, headerBytes: 3))
        expect([okHeader], .truncated(frames: 1, headerBytes: 8))
        expect([okHeader + [0], okCreditBody], .badHeaderLength(9))
        expect([[0x4F, 0x52, 1, 4, 0, 0, 0, 0], okCreditBody], .badSignature)
        expect([[0x4F, 0x51, 2, 4, 0, 0, 0, 0], okCreditBody], .unsupportedVersion(2))
        expect([[0x4F, 0x51, 1, 0x7F, 0, 0, 0, 0], okCreditBody], .unknownCommand(0x7F))
        expect([[0x4F, 0x51, 1, 0x00, 0, 0, 0, 0], okCreditBody], .unknownCommand(0))
        expect([okHeader, okCreditBody, []], .extraFrames(count: 3))
        let big = [UInt8](repeating: 0, count: WireLimits.maxBodySize + 1)
        expect([okHeader, big], .bodyTooLarge(size: big.count, limit: WireLimits.maxBodySize))
    }

    @Test func testMalformedBodies() {
        // Length running past the end, a truncated varint, a group wire type.
        for body: [UInt8] in [[0x0A, 0x05, 0x41], [0x08, 0x80], [0x0B]] {
            guard case .failure(.malformedBody(.dispatch, _)) = WireCodec.decode([Header(command: .dispatch).bytes, body]) else {
                Issue.record("dispatch body \(body) not malformed"); return
            }
        }
        // Invalid UTF-8 in a string field (Hello.name, field 2).
        guard case .failure(.malformedBody(.hello, _)) = WireCodec.decode([Header(command: .hello).bytes, [0x12, 0x01, 0xFF]]) else {
            Issue.record("invalid UTF-8 accepted"); return
        }
        // Leaf messages are parsed by SwiftProtobuf alone.
        guard case .failure(.malformedBody(.credit, _)) = WireCodec.decode([okHeader, [0x08]]) else {
            Issue.record("truncated credit accepted"); return
        }
    }

    @Test func testBatchAndElementLimits() {
        // 8193 empty records: 2 bytes each; rejected by the scan, before parsing.
        let n = WireLimits.maxBatchRecords + 1
        let body: [UInt8] = (0..<(2 * n)).map { $0 % 2 == 0 ? 0x0A : 0x00 }
        expect([Header(command: .dispatch).bytes, body], .batchTooLarge(.dispatch, count: n, limit: WireLimits.maxBatchRecords))
        // One record with 1025 empty inputs.
        var rec: [UInt8] = []
        for _ in 0..<(WireLimits.maxInputsPerRecord + 1) { rec += [0x32, 0x00] }
        let recBody: [UInt8] = [0x0A] + varint(rec.count) + rec
        expect([Header(command: .dispatch).bytes, recBody],
               .fieldTooLarge(.dispatch, field: "records.inputs", size: 1025, limit: 1024))
        // 33 records × 1024 inputs: within each limit, over the total element budget.
        var inputs: [UInt8] = []
        for _ in 0..<1000 { inputs += [0x32, 0x00] }
        let one: [UInt8] = [0x0A] + varint(inputs.count) + inputs
        var many: [UInt8] = []
        for _ in 0..<300 { many += one }
        guard case .failure(.tooManyElements(.dispatch, _, WireLimits.maxElements)) =
            WireCodec.decode([Header(command: .dispatch).bytes, many]) else { Issue.record("element budget not enforced"); return }
        // An empty batch is a missing field.
        expect([Header(command: .dispatch).bytes, []], .missingField(.dispatch, field: "records"))
    }

    @Test func testMissingAndOutOfRangeFields() {
        func check(_ m: Message, _ e: WireError, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(WireCodec.decode(WireCodec.encode(m)) == .failure(e), sourceLocation: sourceLocation)
        }
        var hello = WireHello(); hello.protocolVersion = 1; hello.name = "w"; hello.slots = 1; hello.kinds = ["echo"]
        var h = hello; h.name = ""
        check(.hello(h), .missingField(.hello, field: "name"))
        h = hello; h.protocolVersion = 2
        check(.hello(h), .fieldOutOfRange(.hello, field: "protocol_version", detail: "2, expected 1"))
        h = hello; h.slots = 0
        check(.hello(h), .missingField(.hello, field: "slots"))
        h = hello; h.kinds = []
        check(.hello(h), .missingField(.hello, field: "kinds"))
        // 1.3: a first registration holds nothing (both lists empty); a re-registration's lists are checked.
        guard case .success = WireCodec.decode(WireCodec.encode(.hello(hello))) else { Issue.record("plain HELLO refused"); return }
        h = hello; h.running = [WirePartRef.with { $0.opID = "r/a"; $0.attempt = 0 }]
        check(.hello(h), .missingField(.hello, field: "running[0].attempt"))
        h = hello; var fr = Fixtures.finishedRecord(0); fr.outcome = nil; h.finished = [fr]
        check(.hello(h), .missingField(.hello, field: "finished[0].outcome"))
        h = hello; h.running = (0...WireLimits.maxBatchRecords).map { i in WirePartRef.with { $0.opID = "o\(i)"; $0.attempt = 1 } }
        // The pre-scan counts them before anything is allocated (StructureScan's HELLO node).
        check(.hello(h), .batchTooLarge(.hello, count: WireLimits.maxBatchRecords + 1, limit: WireLimits.maxBatchRecords))
        h = hello; h.name = String(repeating: "x", count: WireLimits.maxIDLength + 1)
        check(.hello(h), .fieldTooLarge(.hello, field: "name", size: WireLimits.maxIDLength + 1, limit: WireLimits.maxIDLength))

        check(.credit(WireCredit()), .missingField(.credit, field: "credit"))

        var d = WireDispatch(); d.records = [Fixtures.dispatchRecord(0)]
        var bad = d; bad.records[0].opID = ""
        check(.dispatch(bad), .missingField(.dispatch, field: "records[0].op_id"))
        bad = d; bad.records[0].attempt = 0
        check(.dispatch(bad), .missingField(.dispatch, field: "records[0].attempt"))
        bad = d; bad.records[0].priority = 3
        check(.dispatch(bad), .fieldOutOfRange(.dispatch, field: "records[0].priority", detail: "3 is not one of -8, -4, 0, 4, 8"))
        bad = d; bad.records[0].qos = .UNRECOGNIZED(9)
        check(.dispatch(bad), .fieldOutOfRange(.dispatch, field: "records[0].qos", detail: "unknown QoS 9"))
        bad = d; bad.records[0].payload = Data(count: WireLimits.maxPayloadSize + 1)
        check(.dispatch(bad), .fieldTooLarge(.dispatch, field: "records[0].payload", size: WireLimits.maxPayloadSize + 1, limit: WireLimits.maxPayloadSize))
        bad = d; bad.records[0].part = UInt32(WireLimits.maxParts)
        check(.dispatch(bad), .fieldOutOfRange(.dispatch, field: "records[0].part", detail: "65536 ≥ 65536"))

        var f = WireFinished(); var r = Fixtures.finishedRecord(0); r.outcome = nil; f.records = [r]
        check(.finished(f), .missingField(.finished, field: "records[0].outcome"))

        var p = WireProgress(); var pr = WireProgressRecord(); pr.opID = "a"; pr.attempt = 1; pr.fraction = .nan; p.records = [pr]
        guard case .failure(.fieldOutOfRange(.progress, field: "records[0].fraction", _)) = WireCodec.decode(WireCodec.encode(.progress(p))) else {
            Issue.record("NaN fraction accepted"); return
        }
        // Found by the fuzzer: NaN with done/total set made a message unequal to itself.
        pr.total = 10; pr.done = 3; p.records = [pr]
        guard case .failure(.fieldOutOfRange(.progress, field: "records[0].fraction", _)) = WireCodec.decode(WireCodec.encode(.progress(p))) else {
            Issue.record("NaN fraction with done/total accepted"); return
        }
        pr.fraction = 0; pr.done = 11; p.records = [pr]
        check(.progress(p), .fieldOutOfRange(.progress, field: "records[0].done", detail: "done 11 > total 10"))

        var c = WireCancelOps(); c.opIds = ["a"]; c.queue = "q"
        check(.cancelOps(c), .fieldOutOfRange(.cancelOps, field: "queue", detail: "give op_ids or queue, not both"))
        check(.cancelOps(WireCancelOps()), .missingField(.cancelOps, field: "op_ids, queue or run"))
        var cr = WireCancelOps(); cr.queue = "q"; cr.run = "r-1"
        check(.cancelOps(cr), .fieldOutOfRange(.cancelOps, field: "run", detail: "give queue or run, not both"))
        check(.queue(WireQueueControl()), .missingField(.queue, field: "settings"))
        var w = WireWait(); w.queue = "q"; w.timeoutUs = -1
        check(.wait(w), .fieldOutOfRange(.wait, field: "timeout_us", detail: "-1 < 0"))
        var s = WireSubmit(); var o = WireOperation(); o.id = "a"; s.operations = [o]
        check(.submit(s), .missingField(.submit, field: "operations[0].kind"))
        check(.error(WireErrorReply()), .missingField(.error, field: "code"))
        var ev = WireEvents(); var e = WireEvent(); e.opID = "a"; ev.events = [e]
        check(.event(ev), .missingField(.event, field: "events[0].state"))
        e.state = .UNRECOGNIZED(42); ev.events = [e]
        check(.event(ev), .fieldOutOfRange(.event, field: "events[0].state", detail: "unknown enum value 42"))
    }

    @Test func testErrorCodesMapping() {
        #expect(WireError.badSignature.code == .malformed)
        #expect(WireError.unsupportedVersion(2).code == .unsupportedVersion)
        #expect(WireError.unknownCommand(9).code == .unknownCommand)
        #expect(WireError.bodyTooLarge(size: 1, limit: 0).code == .tooLarge)
        #expect(WireError.missingField(.hello, field: "x").code == .invalidArgument)
        #expect(WireError.missingField(.hello, field: "x").command == .hello)
        #expect(WireError.fieldOutOfRange(.hello, field: "protocol_version", detail: "2").code == .unsupportedVersion)
    }

    @Test func testRandomBytesNeverTrap() {
        var rng = SplitMix(seed: 0x5EED)
        let commands = Command.allCases.map(\.rawValue)
        var decoded = 0
        for i in 0..<20_000 {
            let len = Int(rng.next() % 96)
            var body = (0..<len).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            if i % 4 == 0, let valid = Fixtures.all.randomElement(using: &rng) {
                // Mutate a valid body: flips keep most of the structure.
                body = WireCodec.encode(valid.message)[1]
                for _ in 0..<(1 + Int(rng.next() % 3)) where !body.isEmpty {
                    body[Int(rng.next() % UInt64(body.count))] ^= UInt8(truncatingIfNeeded: rng.next() | 1)
                }
            }
            let cmd = i % 8 == 0 ? UInt8(truncatingIfNeeded: rng.next()) : commands[Int(rng.next() % UInt64(commands.count))]
            let frames = [[0x4F, 0x51, 1, cmd, 0, 0, 0, 1], body]
            if case .success(let env) = WireCodec.decode(frames) {
                decoded += 1
                #expect(WireCodec.decode(WireCodec.encode(env.message, requestID: env.requestID)) == .success(env))
            }
        }
        #expect(decoded > 0)
    }
}

func varint(_ v: Int) -> [UInt8] {
    var v = UInt64(v), out: [UInt8] = []
    while v >= 0x80 { out.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
    out.append(UInt8(v))
    return out
}

struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E3779B97F4A7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58476D1CE4E5B9
        z = (z ^ (z >> 27)) &* 0x94D049BB133111EB
        return z ^ (z >> 31)
    }
}
