import WireProtocol

/// What one pass of the loop will send to workers, coalesced per worker: all dispatches for a worker
/// become one DISPATCH (or a few, split at the protocol's batch limits), likewise CANCEL. This is where
/// batching happens on the coordinator side: the more work arrives per wake-up, the fewer messages.
/// (Events to watchers: `EventStreams`.)
struct Outbox {
    struct Batch {
        var worker: UInt64
        var message: Message
    }

    /// Per worker, in the order each first got something this pass (so a pass's messages leave in the
    /// same order every time: the embedded harness compares runs message by message).
    /// `bytes`: the records' summed `wireSizeBound`, so a pass's DISPATCH that fits one message (the usual
    /// case) is made without reading its records again.
    private var dispatches: [(worker: UInt64, records: [WireDispatchRecord], bytes: Int)] = []
    private var dispatchSlot: [UInt64: Int] = [:]
    /// How many records each worker was sent in the last pass that sent it any, up to one message's worth.
    private var recordsLastPass: [UInt64: Int] = [:]
    private static let rememberedWorkers = 4096
    private var cancels: [(worker: UInt64, records: [WireCancelRecord])] = []
    private var cancelSlot: [UInt64: Int] = [:]

    /// `consuming`: the record made for it is moved in, not copied (a copy is a dozen retains).
    mutating func dispatch(_ record: consuming WireDispatchRecord, to worker: UInt64) {
        let bytes = record.wireSizeBound
        if let i = dispatchSlot[worker] {
            dispatches[i].records.append(record)
            dispatches[i].bytes += bytes
        } else {
            dispatchSlot[worker] = dispatches.count
            // Room for as many as the worker got last pass: grown from one, the array was copied up to
            // eight times on its way to a few hundred records (the DISPATCH takes it, so it is not reused).
            var records: [WireDispatchRecord] = []
            records.reserveCapacity(recordsLastPass[worker] ?? 1)
            records.append(record)
            dispatches.append((worker, records, bytes))
        }
    }

    mutating func cancel(op: String, attempt: Int, reason: String, on worker: UInt64) {
        var r = WireCancelRecord()
        r.opID = op
        r.attempt = UInt32(attempt)
        r.reason = reason
        guard let i = cancelSlot[worker] else {
            cancelSlot[worker] = cancels.count
            cancels.append((worker, [r]))
            return
        }
        // A multi-part op yields one cancel per part; the wire names (op, attempt) once.
        if cancels[i].records.contains(where: { $0.opID == op && $0.attempt == r.attempt }) { return }
        cancels[i].records.append(r)
    }

    /// Empties the outbox into messages within the protocol's limits: one DISPATCH per worker when its
    /// records fit one, else `Batcher` cuts them.
    mutating func drain() -> [Batch] {
        var out: [Batch] = []
        // Kept across passes (a pass often sends to one worker only), forgotten now and then so workers
        // that left do not pile up.
        if recordsLastPass.count > Self.rememberedWorkers { recordsLastPass.removeAll() }
        for (w, var records, bytes) in dispatches {
            recordsLastPass[w] = min(records.count, WireLimits.maxBatchRecords)
            if records.count <= WireLimits.maxBatchRecords && bytes <= WireLimits.batchBodyBudget {
                out.append(Batch(worker: w, message: WireDispatchRecord.message(records, sentUs: 0)))
                continue
            }
            while let m = Batcher.message(draining: &records) { out.append(Batch(worker: w, message: m)) }
        }
        for (w, var records) in cancels {
            while let m = Batcher.message(draining: &records) { out.append(Batch(worker: w, message: m)) }
        }
        dispatches.removeAll(keepingCapacity: true)
        dispatchSlot.removeAll(keepingCapacity: true)
        cancels.removeAll(keepingCapacity: true)
        cancelSlot.removeAll(keepingCapacity: true)
        return out
    }
}
