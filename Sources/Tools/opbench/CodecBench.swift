import Foundation
import WireProtocol

/// Encode+decode throughput of DISPATCH and FINISHED batches (256 records,
/// 64-byte payloads/results) on one core: one iteration = `WireCodec.encode` to
/// frames, then `WireCodec.decode` (header checks, structure scan, protobuf parse,
/// validation). Target: ≥ 2,000,000 records/s.
func runCodecBench(quick: Bool) -> [BenchResult] {
    let batch = 256
    let seconds = quick ? 0.3 : 2.0
    let payload = [UInt8](repeating: 0xAB, count: 64)

    var dispatch = WireDispatch()
    dispatch.records = (0..<batch).map { i in
        var r = WireDispatchRecord()
        r.opID = "op-\(100_000 + i)"
        r.part = 0
        r.attempt = 1
        r.kind = "echo"
        r.payload = Data(payload)
        r.priority = 4
        r.qos = .utility
        return r
    }
    var finished = WireFinished()
    finished.credit = UInt32(batch)
    finished.records = (0..<batch).map { i in
        var r = WireFinishedRecord()
        r.opID = "op-\(100_000 + i)"
        r.attempt = 1
        r.succeeded = Data(payload)
        return r
    }

    var results: [BenchResult] = []
    for (name, message) in [("dispatch_256x64B", Message.dispatch(dispatch)), ("finished_256x64B", .finished(finished))] {
        let frames = WireCodec.encode(message)
        let bodyBytes = frames[1].count
        // Encode alone, decode alone, then both together (the figure with the target).
        let enc = measure(seconds: seconds) { _ = WireCodec.encode(message).count }
        let dec = measure(seconds: seconds) {
            if case .failure(let e) = WireCodec.decode(frames) { fatalError("bench decode failed: \(e)") }
        }
        let both = measure(seconds: seconds) {
            if case .failure(let e) = WireCodec.decode(WireCodec.encode(message)) { fatalError("bench decode failed: \(e)") }
        }
        // SwiftProtobuf's parse alone (no header checks, pre-scan or validation): the floor
        // of what our checks cost.
        let body = frames[1]
        let raw: Double = switch message {
        case .dispatch: measure(seconds: seconds) { _ = try? WireDispatch(serializedBytes: body) }
        default: measure(seconds: seconds) { _ = try? WireFinished(serializedBytes: body) }
        }
        let rate = Double(batch) * both
        results.append(BenchResult(
            suite: "wire", name: name,
            fields: [
                ("records", Double(batch)), ("body_bytes", Double(bodyBytes)),
                ("encode_rec_per_s", (Double(batch) * enc).rounded()),
                ("decode_rec_per_s", (Double(batch) * dec).rounded()),
                ("pb_parse_rec_per_s", (Double(batch) * raw).rounded()),
                ("enc_dec_rec_per_s", rate.rounded()),
                ("enc_dec_MB_per_s", Double(bodyBytes) * both / 1e6),
            ],
            note: "target ≥ 2M rec/s: \(rate >= 2_000_000 ? "met" : "NOT met")"))
    }
    results.append(submitSendCost(seconds: seconds))
    return results
}

/// What a client spends per operation to send a SUBMIT of 8,192 `noop`s (as the e2e benchmark's
/// client and opctl do): cutting the batch, then `encodeChecked` (validation, size bound, protobuf
/// encode, the pre-scan of the encoded body), and each step alone, in ns per operation.
private func submitSendCost(seconds: Double) -> BenchResult {
    let n = WireLimits.maxBatchRecords
    let ops = (0..<n).map { i in
        var o = WireOperation()
        o.id = "ind256-\(100_000 + i)"
        o.kind = "noop"
        o.queue = "e2e-independent-pf256"
        return o
    }
    guard let message = Batcher.submits(ops, run: "b", appendAll: true).first else { fatalError("no SUBMIT") }
    let perOp = { (rate: Double) in (1e9 / rate / Double(n) * 10).rounded() / 10 }
    let split = measure(seconds: seconds) { _ = Batcher.submits(ops, run: "b", appendAll: true).count }
    let validate = measure(seconds: seconds) { _ = try? WireCodec.validate(message) }
    let encode = measure(seconds: seconds) { _ = WireCodec.encode(message).count }
    let checked = measure(seconds: seconds) { _ = try? WireCodec.encodeChecked(message).count }
    return BenchResult(suite: "wire", name: "submit_send_8192", fields: [
        ("ops", Double(n)), ("split_ns_per_op", perOp(split)), ("validate_ns_per_op", perOp(validate)),
        ("encode_ns_per_op", perOp(encode)), ("encode_checked_ns_per_op", perOp(checked)),
    ], note: "client side of one SUBMIT, ns per operation")
}

/// Best of 3 runs of `body` for about `seconds` each, in iterations per second
/// (best-of, because the 2 shared cores are busy with other builds now and then).
private func measure(seconds: Double, _ body: () -> Void) -> Double {
    (0..<3).map { _ in measureOnce(seconds: seconds / 3, body) }.max()!
}

private func measureOnce(seconds: Double, _ body: () -> Void) -> Double {
    for _ in 0..<20 { body() }  // warm-up
    let start = BenchProbe.nowNanos()
    let deadline = start + UInt64(seconds * 1e9)
    var iterations = 0
    var now = start
    while now < deadline {
        for _ in 0..<16 { body() }
        iterations += 16
        now = BenchProbe.nowNanos()
    }
    return Double(iterations) / (Double(now - start) / 1e9)
}
