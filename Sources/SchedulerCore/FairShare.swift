import HeapModule
import DequeModule

// Fair share between share keys, concurrency keys and rate limits (A11, docs/SEMANTICS.md).
//
// Shares. Each queue has a `ShareTable` (`Scheduler.shareTables[q]`): one slot per share key its ops
// have had (the submitter by default). While a queue has one share key nothing else happens: a lane's
// `heap` is the old single heap. With several, a lane keeps a ready queue per share slot (`ShareQueue`),
// so inside one share key the order is S6's (priority, then submission order), and `fronts`: the head of
// every non-empty share queue, ordered by the head's priority level, then by the share's
// *pass*, then by submission order.
// Shares take turns of `ShareTable.turn` dispatches (deficit round robin); a turn adds
// `turn × strideUnit / weight` to the share's pass (stride scheduling: the smallest pass goes next).
// Priority therefore still dominates; at equal priority shares take turns in proportion to their
// weights. A share that had nothing ready starts again at the queue's virtual time (the pass of the
// latest turn), so an idle share does not bank turns.
//
// Concurrency keys. A dispatched or executing op of a key holds one of the queue's `keyLimit` places. An
// op whose turn comes while its key is full is taken off its heap and waits in the key's FIFO (still
// `ready`; `heapKey == Scheduler.heldForKey`), or is cancelled (`cancel-newest`), or makes the oldest
// holder be cancelled (`cancel-in-progress`). When a holder leaves, the first waiter goes back to its heap
// at its old place (its key is its submission order).
//
// Rate. A queue's `RateLimit` is checked before a new op is dispatched (parts of running ops are exempt,
// as from `maxConcurrent`), as GCRA: `rateTheoreticalAt` is when the next dispatch is due, at most
// `burst − 1` intervals early. A queue over its rate leaves the ring and a timer brings it back.
//
// Key rate. A queue's `keyRate` is a GCRA per concurrency key (`ConcurrencyKey.rateTheoreticalAt`), checked
// after the key's limit when a keyed op's turn comes. An op without a token waits in the key's FIFO like a
// limit-held one, whatever the key strategy (the cancel strategies are about the limit only), and the key's
// wake (`Timers.keyRates`, one current entry per key: `rateWakeAt`) puts its first waiter back on its heap when
// the next token is due; it goes through dispatch again (limit, rate, charge). While waiters remain and the
// key is under its limit a wake stays armed, so a released op that is not dispatched (no credit, cancelled)
// leaves none stranded. Ops without a key never come here.

/// One share key of a queue. (Its ready and running ops are counted when asked for — `shareCounts` —
/// not on every transition.)
struct ShareSlot {
    let name: String
    var stride: Int64
    var pass: Int64 = 0
    /// Dispatches left in its current turn (deficit round robin).
    var turnLeft: Int32 = ShareTable.turn
    /// New ops dispatched while the queue shared (a queue with one share key counts nothing).
    var dispatched: UInt64 = 0
}

struct ShareTable {
    /// Slot 0 exists from the start: the only one in `fifo` mode, the first key's otherwise (`named`).
    /// Slots are found by name through `Scheduler.shareIndex` (a lookup here copied the queue's state).
    var slots: [ShareSlot] = [ShareSlot(name: "", stride: ShareTable.strideUnit)]
    var named = false
    /// More than one slot: the queue's lanes keep fronts (stored: it is read on every dispatch).
    var isSharing = false
    /// The pass of the latest dispatch: where a share that comes back from idle starts.
    var virtualTime: Int64 = 0

    static let strideUnit: Int64 = 1 << 20
    /// Dispatches a share makes in a row before the next share's turn: the quantum of deficit round robin.
    /// Fairness over many dispatches is the same as one at a time; a turn costs one heap operation
    /// instead of one per dispatch. (A turn lasts 8 dispatches: a submitter waits at most 8 × the
    /// number of shares ahead of it.)
    static let turn: Int32 = 8

    /// A dispatch of share `s` (one write of the table): true when its turn ended, so its pass moved on
    /// (and the queue's virtual time with it) and its front must be replaced.
    @inline(__always) mutating func charge(_ s: Int) -> Bool {
        slots[s].dispatched &+= 1
        slots[s].turnLeft -= 1
        if slots[s].turnLeft > 0 { return false }
        slots[s].turnLeft = ShareTable.turn
        let pass = slots[s].pass
        slots[s].pass = pass &+ slots[s].stride &* Int64(ShareTable.turn)
        if pass > virtualTime { virtualTime = pass }
        return true
    }
}

/// A sharing lane's next op, with its share's slot and pass (`Scheduler.sharedHead`).
struct SharedHead {
    var entry: ReadyEntry
    var slot: Int
    var pass: Int64
}

/// A name that means something within one queue (a share key, a concurrency key): what their indexes
/// are keyed by.
/// (Hashed by Swift's seeded hasher on purpose: share keys and concurrency keys are chosen per op by
/// submitters, and an unkeyed hash such as IdTable's FNV tag would let one craft colliding names and
/// make every lookup linear. An FNV-keyed index saved 31 instructions per op at 1,000 keys; not worth it.)
struct QueueScopedName: Hashable {
    let queue: QueueIndex
    let name: String
}

/// A share's head in a lane's `fronts`; the max is the share to take from next: the head's priority
/// level, then the smaller pass (both in `rank`, so most comparisons are one), then submission order.
struct ShareFront: Comparable {
    var rank: Int64
    var headKey: Int64
    var slot: Int32
    var version: UInt32

    init(headKey: Int64, pass: Int64, slot: Int32, version: UInt32) {
        // Passes grow by at most 2^20 a dispatch: 2^59 is 2^39 dispatches of one share.
        rank = (headKey >> 59) << 59 | (ShareFront.passLimit - min(pass, ShareFront.passLimit))
        self.headKey = headKey; self.slot = slot; self.version = version
    }

    static let passLimit: Int64 = 1 << 59 - 1
    var pass: Int64 { ShareFront.passLimit - (rank & ShareFront.passLimit) }

    static func < (a: ShareFront, b: ShareFront) -> Bool {
        a.rank != b.rank ? a.rank < b.rank : a.headKey < b.headKey
    }
}

struct ConcurrencyKey {
    let name: String
    let queue: QueueIndex
    /// Dispatched or executing ops of the key, oldest first.
    var holders: [Int32] = []
    /// Ready ops taken off their heap while the key was full or had no rate token, in the order their turn
    /// came (an op held again after its release goes back to the front: it is older than the rest).
    var waiting = Deque<Int32>()
    /// Per-key rate (GCRA, `QueueFairness.keyRate`): the theoretical time of the key's next dispatch, µs.
    var rateTheoreticalAt: Double = 0
    /// When the key's current `Timers.keyRates` entry is due; .max = none.
    var rateWakeAt: Int64 = .max
}

extension Scheduler {
    /// `heapKey` of a ready op that waits for a place of its concurrency key (no heap entry matches it).
    static let heldForKey: Int64 = -1

    // MARK: Share keys

    /// The share key op `spec` of `run` has in queue `q` under the queue's mode.
    func shareName(_ spec: OperationSpec, run: RunSlot, queue q: QueueIndex) -> String {
        switch queues[q].fairness.share {
        case .fifo: return ""
        case .submitter: return runs[run].submitter
        case .run: return runs[run].name
        case .key: return spec.share ?? runs[run].submitter
        }
    }

    /// The slot of share key `name` in queue `q`, made on first use. The first key takes slot 0; a second
    /// key turns sharing on in the queue's lanes.
    mutating func shareSlot(_ name: String, queue q: QueueIndex) -> Int32 {
        let key = QueueScopedName(queue: q, name: name)
        if let s = shareIndex[key] { return s }
        if !shareTables[q].named {
            shareTables[q].slots[0] = ShareSlot(name: name, stride: stride(name, q))
            shareTables[q].named = true
            shareIndex[key] = 0
            return 0
        }
        let s = Int32(shareTables[q].slots.count)
        var slot = ShareSlot(name: name, stride: stride(name, q))
        slot.pass = shareTables[q].virtualTime
        shareTables[q].slots.append(slot)
        shareIndex[key] = s
        if s == 1 { startSharing(q) }
        return s
    }

    func stride(_ name: String, _ q: QueueIndex) -> Int64 {
        ShareTable.strideUnit / Int64(max(1, queues[q].fairness.weight(of: name)))
    }

    /// The queue's lanes move their heap to share slot 0's queue and get a front for it.
    mutating func startSharing(_ q: QueueIndex) {
        shareTables[q].isSharing = true
        for l32 in queues[q].lanesByQos.joined() {
            let l = Int(l32)
            lanes[l].sharing = true
            lanes[l].shares = [ShareQueue(lanes[l].heap.unordered)]
            lanes[l].heap = Heap()
            pushFront(l, 0)
        }
    }

    @inline(__always) func isSharing(lane l: Int) -> Bool { lanes[l].sharing }

    @inline(__always) mutating func pushShared(_ l: Int, _ s: Int, _ e: ReadyEntry) {
        let q = lanes[l].queue
        // A share that comes back from idle starts at the queue's virtual time (banks no turns).
        let pass = lanes[l].shareIsEmpty(s) ? resumeShare(q, s) : sharePass(q, s)
        lanes[l].insertShared(s, e, pass: pass)
    }

    /// Share `s` of queue `q` has a ready op again: its pass, moved up to the queue's virtual time.
    @inline(__always) mutating func resumeShare(_ q: QueueIndex, _ s: Int) -> Int64 {
        shareTables.withUnsafeMutableBufferPointer { tables in
            let vt = tables[q.index].virtualTime
            return tables[q.index].slots.withUnsafeMutableBufferPointer { slots in
                if slots[s].pass < vt { slots[s].pass = vt }
                return slots[s].pass
            }
        }
    }

    /// Share `s`'s pass in queue `q`. (Read through the buffer: a read of the nested array retained it.)
    @inline(__always) func sharePass(_ q: QueueIndex, _ s: Int) -> Int64 {
        shareTables.withUnsafeBufferPointer { $0[q.index].slots.withUnsafeBufferPointer { $0[s].pass } }
    }

    /// A new current front for share `s` in lane `l` (older ones go stale).
    @inline(__always) mutating func pushFront(_ l: Int, _ s: Int) {
        guard let head = shareHeapMax(l, s) else { return }
        lanes[l].pushFront(s, headKey: head.key, pass: sharePass(lanes[l].queue, s))
    }

    /// The lane's next op by share turns (sharing on): fronts that are stale are dropped or renewed.
    @inline(__always) mutating func cleanSharedHead(_ l: Int) -> ReadyEntry? { sharedHead(l)?.entry }

    /// The lane's next op by share turns with its share's slot and pass (what a dispatch needs next).
    @inline(__always) mutating func sharedHead(_ l: Int) -> SharedHead? {
        let q = lanes[l].queue
        while let f = lanes[l].fronts.max {
            let s = Int(f.slot)
            if f.version != lanes[l].shares[s].frontVersion { _ = lanes[l].fronts.popMax(); continue }
            guard let head = cleanHeap(l, s) else { _ = lanes[l].fronts.popMax(); continue }
            // A front stays while its share's turn lasts (its head key may be older); only a change of the
            // head's priority level or of the share's pass makes it stale.
            let pass = f.pass
            if head.key >> 59 != f.headKey >> 59 || pass != min(sharePass(q, s), ShareFront.passLimit) {
                _ = lanes[l].fronts.popMax()
                pushFront(l, s)
                continue
            }
            return SharedHead(entry: head, slot: s, pass: pass)
        }
        return nil
    }

    /// Takes the head `sharedHead(l)` returned (of share `s`) off its queue. Its front stays on top until
    /// `settleShare` replaces it (one heap operation instead of a pop and a push).
    @inline(__always) mutating func takeHead(_ l: Int, share s: Int) -> Int32 {
        lanes[l].takeShared(s)
    }

    @inline(__always) func shareHeapMax(_ l: Int, _ s: Int) -> ReadyEntry? {
        lanes[l].shares[s].max
    }

    /// After `takeHead` of share `s`: charges a dispatched op's share its turn, and replaces the share's
    /// front (the top of `fronts`) by its next one.
    @inline(__always) mutating func settleShare(_ l: Int, share s: Int, dispatched: Bool) {
        let q = lanes[l].queue
        if !dispatched {
            // A held or cancelled op: what its key's strategy did may have pushed fronts since `takeHead`.
            if let top = lanes[l].fronts.max, Int(top.slot) == s, top.version == lanes[l].shares[s].frontVersion {
                _ = lanes[l].fronts.popMax()
            }
            pushFront(l, s)
            return
        }
        // Deficit round robin: a share keeps its turn for `ShareTable.turn` dispatches, then pays them all
        // at once (its front is replaced once a turn, not once a dispatch).
        // (Through the buffer: the array's `modify` accessor was an out-of-line coroutine call here.)
        let turnEnded = shareTables.withUnsafeMutableBufferPointer { $0[q.index].charge(s) }
        if turnEnded {
            lanes[l].renewTopFront(s, pass: sharePass(q, s))
        } else {
            lanes[l].dropTopFrontIfEmpty(s)
        }
    }

    /// Whether lane head `a` (its share's pass `passA`) goes before `b`: priority level, then the smaller
    /// pass, then submission order. Without sharing every pass is 0: the key alone decides, as before.
    @inline(__always) static func goesFirst(_ a: Int64, _ passA: Int64, before b: Int64, _ passB: Int64) -> Bool {
        let levelA = a >> 59, levelB = b >> 59
        if levelA != levelB { return levelA > levelB }
        if passA != passB { return passA < passB }
        return a > b
    }

    /// A queue's fairness settings change: weights re-stride; a new share mode re-shares its unfinished ops.
    mutating func applyFairness(_ q: QueueIndex, _ f: QueueFairness) {
        let modeChanged = queues[q].fairness.share != f.share
        if modeChanged && queues[q].fairness.share == .key {
            // In `key` mode an op's share is its slot's name (opShares keeps only what other modes ignore).
            for op in queues[q].members where ops.hot[Int(op)].state != .finished && opShares[op] == nil {
                opShares[op] = shareTables[q].slots[Int(ops.hot[Int(op)].share)].name
            }
        }
        if f.keyLimit > 0 && (queues[q].fairness.keyLimit == 0 || f.keyLimit < queues[q].fairness.keyLimit) { keyLimitLowered = true }
        let ageingChanged = queues[q].fairness.ageingMicros != f.ageingMicros
        // Waiters may move when a key rate is or was in place, or under a (new) limit.
        let keysMayMove = f.keyRate != nil || queues[q].fairness.keyRate != nil || f.keyLimit > 0
        let keyRateChanged = f.keyRate != queues[q].fairness.keyRate
        queues[q].fairness = f
        if ageingChanged { queues[q].ageingDue = .max; armAgeing(q) }
        if f.rate == nil { queues[q].rateTheoreticalAt = 0 }
        for s in shareTables[q].slots.indices {
            shareTables[q].slots[s].stride = stride(shareTables[q].slots[s].name, q)
        }
        if modeChanged { reshare(q) }
        if keysMayMove { resettleKeys(q, rateChanged: keyRateChanged) }
        activateAll(q)
    }

    /// After a change of `q`'s key limit or key rate: each key with waiters gets them released as far as
    /// its new limit and rate allow (and its wake re-armed). A new rate owes at most one of its own
    /// intervals (not the old rate's: 1/m → 10/s must not wait out the minute). An admin-made change: a
    /// pass over the keys.
    mutating func resettleKeys(_ q: QueueIndex, rateChanged: Bool) {
        let rate = queues[q].fairness.keyRate
        for k in concurrencyKeys.indices.map(ConcurrencyKeyIndex.init) where concurrencyKeys[k].queue == q {
            if rateChanged {
                let capped = rate.map { min(concurrencyKeys[k].rateTheoreticalAt, Double(now) + $0.intervalMicros) } ?? 0
                concurrencyKeys[k].rateTheoreticalAt = capped
                concurrencyKeys[k].rateWakeAt = .max
            }
            if !concurrencyKeys[k].waiting.isEmpty { releaseWaiters(k) }
        }
    }

    /// Every unfinished op of `q` gets its share under the queue's current mode; the lanes' heaps and
    /// fronts are rebuilt (a rare, admin-made change: a pass over the queue's ops).
    mutating func reshare(_ q: QueueIndex) {
        var ready: [Int32] = []
        for l32 in queues[q].lanesByQos.joined() {
            let l = Int(l32)
            for e in lanes[l].entriesBySlot.joined() where ops.hot[Int(e.op)].heapKey == e.key && ops.hot[Int(e.op)].state == .ready {
                ready.append(e.op)
            }
            lanes[l].heap = Heap()
            lanes[l].shares = []
            lanes[l].fronts = Heap()
            lanes[l].sharing = false
        }
        shareTables[q] = ShareTable()
        shareIndex = shareIndex.filter { $0.key.queue != q }
        for op in queues[q].members where ops.hot[Int(op)].state != .finished {
            let i = Int(op)
            let spec = OperationSpec(id: "", share: opShares[op])
            ops.hot[i].share = shareSlot(shareName(spec, run: ops.hot[i].run, queue: q), queue: q)
        }
        for op in ready.sorted() { pushReady(op) }
    }

    // MARK: Concurrency keys

    mutating func concurrencyKey(_ name: String, queue q: QueueIndex) -> ConcurrencyKeyIndex {
        let scoped = QueueScopedName(queue: q, name: name)
        if let known = concurrencyKeyIndex[scoped] { return known }
        let k = ConcurrencyKeyIndex(concurrencyKeys.count)
        concurrencyKeys.append(ConcurrencyKey(name: name, queue: q))
        concurrencyKeyIndex[scoped] = k
        return k
    }

    /// Whether `op` (just taken off its heap) may be dispatched under its key's limit, then its key's rate
    /// (a token is taken); if not, it waits for a place or a token (or is cancelled, or has the oldest
    /// holder cancelled: `KeyStrategy`, for the limit only).
    mutating func admitByKey(_ op: Int32, _ out: inout [Action]) -> Bool {
        let k = ops.hot[Int(op)].concurrencyKey
        if !k.isKey { return true }
        let q = concurrencyKeys[k].queue
        let limit = queues[q].fairness.keyLimit
        if limit <= 0 || concurrencyKeys[k].holders.count < limit {
            guard let rate = queues[q].fairness.keyRate else { return true }
            return admitByKeyRate(op, k, rate)
        }
        let key = concurrencyKeys[k].name
        switch queues[q].fairness.keyStrategy {
        case .wait:
            hold(op, k)
        case .cancelNewest:
            cancelOp(op, "concurrency key \(key) is at its limit of \(limit) (cancel-newest)", cascade: false, &out)
        case .cancelInProgress:
            hold(op, k)
            if let oldest = concurrencyKeys[k].holders.first(where: { ops.hot[Int($0)].flags & Flag.cancelled == 0 }) {
                cancelOp(oldest, "replaced by \(ops.ids[Int(op)]) of concurrency key \(key) (cancel-in-progress)", cascade: false, &out)
            }
        }
        return false
    }

    private mutating func hold(_ op: Int32, _ k: ConcurrencyKeyIndex) {
        ops.hot[Int(op)].heapKey = Scheduler.heldForKey
        // A released waiter whose turn came again before its place or token: back to the front (op
        // numbers are submission order).
        if let first = concurrencyKeys[k].waiting.first, op < first {
            concurrencyKeys[k].waiting.prepend(op)
        } else {
            concurrencyKeys[k].waiting.append(op)
        }
    }

    /// The key-rate check of `admitByKey`: takes a token of key `k`, or holds `op` until the next is due.
    private mutating func admitByKeyRate(_ op: Int32, _ k: ConcurrencyKeyIndex, _ rate: RateLimit) -> Bool {
        if let due = keyTokenDue(k, rate) {
            hold(op, k)
            armKeyRateWake(k, at: due)
            return false
        }
        concurrencyKeys[k].rateTheoreticalAt = max(concurrencyKeys[k].rateTheoreticalAt, Double(now)) + rate.intervalMicros
        return true
    }

    /// When key `k`'s next token is due under `rate`; nil when one is there now.
    func keyTokenDue(_ k: ConcurrencyKeyIndex, _ rate: RateLimit) -> Int64? {
        let due = concurrencyKeys[k].rateTheoreticalAt - Double(rate.burst - 1) * rate.intervalMicros
        return Double(now) >= due ? nil : Int64(due.rounded(.up))
    }

    /// Key `k`'s wake at `at` unless one is due sooner (the later entry goes stale).
    mutating func armKeyRateWake(_ k: ConcurrencyKeyIndex, at: Int64) {
        guard at < concurrencyKeys[k].rateWakeAt else { return }
        concurrencyKeys[k].rateWakeAt = at
        timers.keyRates.insert(TargetDeadline(at: at, target: k))
    }

    /// Whether key `k` has a waiter still held (its FIFO may keep entries of ops that left).
    func hasLiveWaiter(_ k: ConcurrencyKeyIndex) -> Bool {
        concurrencyKeys[k].waiting.contains { ops.hot[Int($0)].state == .ready && ops.hot[Int($0)].heapKey == Scheduler.heldForKey }
    }

    /// Key `k`'s first held waiter, taken off its FIFO and put back on its heap; false when none is left.
    private mutating func releaseFirstWaiter(_ k: ConcurrencyKeyIndex) -> Bool {
        while let w = concurrencyKeys[k].waiting.popFirst() {
            let i = Int(w)
            guard ops.hot[i].state == .ready && ops.hot[i].heapKey == Scheduler.heldForKey else { continue }
            ops.hot[i].heapKey = 0
            pushReady(w)
            return true
        }
        return false
    }

    /// With a key rate and waiters left: a wake when the token after one more dispatch is due.
    private mutating func armNextKeyToken(_ k: ConcurrencyKeyIndex) {
        guard let rate = queues[concurrencyKeys[k].queue].fairness.keyRate, hasLiveWaiter(k) else { return }
        let next = max(concurrencyKeys[k].rateTheoreticalAt, Double(now)) + rate.intervalMicros - Double(rate.burst - 1) * rate.intervalMicros
        armKeyRateWake(k, at: max(now + 1, Int64(next.rounded(.up))))
    }

    /// Key `k`'s waiters back on their heaps as far as its limit has places: one under a key rate (the wake
    /// is re-armed for the next), all that fit without one. At its limit nothing: a holder's leaving
    /// releases the next (`keyPlaceChanged`).
    mutating func releaseWaiters(_ k: ConcurrencyKeyIndex) {
        let q = concurrencyKeys[k].queue
        let limit = queues[q].fairness.keyLimit
        var places = limit > 0 ? limit - concurrencyKeys[k].holders.count : Int.max
        guard places > 0 else { return }
        if queues[q].fairness.keyRate != nil { places = 1 }
        while places > 0, releaseFirstWaiter(k) { places -= 1 }
        armNextKeyToken(k)
    }

    /// Keys' wakes that are due: each releases its key's next waiter (`releaseWaiters`).
    mutating func fireKeyRateWakes() {
        while let top = timers.keyRates.popDue(now) {
            let k = top.target
            guard k.index < concurrencyKeys.count, concurrencyKeys[k].rateWakeAt == top.at else { continue }
            concurrencyKeys[k].rateWakeAt = .max
            releaseWaiters(k)
        }
    }

    /// When key `k`'s next token is due, for `why`: its wake's time when a token is there but not yet used.
    func keyNextToken(_ k: ConcurrencyKeyIndex) -> Int64 {
        guard let rate = queues[concurrencyKeys[k].queue].fairness.keyRate else { return now }
        return keyTokenDue(k, rate) ?? (concurrencyKeys[k].rateWakeAt == .max ? now : concurrencyKeys[k].rateWakeAt)
    }

    /// A keyed op moved from `old` to `new` (`transition`). (Out of line: `transition` is on every op's
    /// path, this only on keyed ops'.)
    @inline(never)
    mutating func keyedTransition(_ op: Int32, _ old: OpState, _ new: OpState) {
        if old.occupiesQueue != new.occupiesQueue { return keyPlaceChanged(op, taking: new.occupiesQueue) }
        if old == .ready && new == .finished { keyReadyOpEnded(op) }
    }

    /// A ready op of a key ended without being dispatched (cancelled). It may be the waiter a leaving
    /// holder released, so the place it was to take is free: the next waiter goes instead (else, with no
    /// holder left to leave, the key's waiters would wait for ever). One released too many is harmless:
    /// dispatch checks the limit again and holds it back at the front of the FIFO.
    mutating func keyReadyOpEnded(_ op: Int32) {
        let k = ops.hot[Int(op)].concurrencyKey
        guard !concurrencyKeys[k].waiting.isEmpty else { return }
        let fairness = queues[concurrencyKeys[k].queue].fairness
        guard fairness.keyLimit <= 0 || concurrencyKeys[k].holders.count < fairness.keyLimit else { return }
        _ = releaseFirstWaiter(k)
        if fairness.keyRate != nil { armNextKeyToken(k) }
    }

    /// `op` of key `k` took (`taking`) or left a place; a place left goes to the key's first waiter.
    mutating func keyPlaceChanged(_ op: Int32, taking: Bool) {
        let k = ops.hot[Int(op)].concurrencyKey
        if taking { concurrencyKeys[k].holders.append(op); return }
        if let at = concurrencyKeys[k].holders.firstIndex(of: op) { concurrencyKeys[k].holders.remove(at: at) }
        if concurrencyKeys[k].waiting.isEmpty { return }
        _ = releaseFirstWaiter(k)
        // Under a key rate the others need a wake while the key is under its limit.
        if queues[concurrencyKeys[k].queue].fairness.keyRate != nil { armNextKeyToken(k) }
    }

    // MARK: Rate

    /// Whether queue `q` may dispatch a new op now under its rate; if not, a tick is due when it may.
    mutating func admitByRate(_ q: QueueIndex) -> Bool {
        guard let rate = queues[q].fairness.rate else { return true }
        let t = Double(now)
        let due = queues[q].rateTheoreticalAt - Double(rate.burst - 1) * rate.intervalMicros
        if t >= due { return true }
        timers.queueRates.insert(TargetDeadline(at: Int64(due.rounded(.up)), target: q))
        return false
    }

    mutating func chargeRate(_ q: QueueIndex) {
        guard let rate = queues[q].fairness.rate else { return }
        queues[q].rateTheoreticalAt = max(queues[q].rateTheoreticalAt, Double(now)) + rate.intervalMicros
    }

    /// When a rate-limited queue of `q` may dispatch again; nil when it may now.
    func nextToken(_ q: QueueIndex) -> Int64? {
        guard let rate = queues[q].fairness.rate else { return nil }
        let due = queues[q].rateTheoreticalAt - Double(rate.burst - 1) * rate.intervalMicros
        return Double(now) >= due ? nil : Int64(due.rounded(.up))
    }

    mutating func fireRateWakes() {
        while let top = timers.queueRates.popDue(now) {
            activateAll(top.target)
        }
    }

    // MARK: Settings and status

    mutating func setFairness(_ ref: ClientRef, _ name: String, _ f: QueueFairness, _ out: inout [Action]) {
        guard let q = queueIndex[name] else { out.append(.reply(ref, .error(.notFound("unknown queue \(name)")))); return }
        if let p = f.problem { out.append(.reply(ref, .error(.invalid("queue \(name): \(p)")))); return }
        applyFairness(q, f)
        journalQueue(q, &out)
        out.append(.reply(ref, .ok))
    }

    /// Ready and running (dispatched or executing) ops per share slot of queue `q`: one pass over its
    /// unfinished ops (status and metrics ask; the per-op paths keep no per-share counts).
    func shareCounts(_ q: QueueIndex) -> (ready: [Int], running: [Int]) {
        var ready = [Int](repeating: 0, count: shareTables[q].slots.count)
        var running = ready
        for op in queues[q].members {
            let h = ops.hot[Int(op)]
            switch h.state {
            case .ready: ready[Int(h.share)] += 1
            case .dispatched, .executing: running[Int(h.share)] += 1
            default: break
            }
        }
        return (ready, running)
    }

    func fairnessStatus(_ q: QueueIndex) -> QueueFairnessStatus {
        let table = shareTables[q]
        let fair = queues[q].fairness
        let counts = fair.share == .fifo || !table.named ? ([], []) : shareCounts(q)
        let shares = fair.share == .fifo || !table.named ? [] : table.slots.enumerated().map { s, slot in
            ShareStatus(name: slot.name, weight: fair.weight(of: slot.name), ready: counts.0[s], running: counts.1[s],
                        dispatchedTotal: slot.dispatched)
        }.sorted { $0.name < $1.name }
        let keys = concurrencyKeys.filter { $0.queue == q && (!$0.holders.isEmpty || !$0.waiting.isEmpty) }.map { k in
            ConcurrencyKeyStatus(name: k.name, holding: k.holders.count,
                                 waiting: k.waiting.filter { ops.hot[Int($0)].state == .ready && ops.hot[Int($0)].heapKey == Scheduler.heldForKey }.count,
                                 holders: k.holders.map { ops.ids[Int($0)] })
        }.sorted { $0.name < $1.name }
        return QueueFairnessStatus(queue: queues[q].name, fairness: fair, shares: shares, keys: keys, nextTokenAt: nextToken(q))
    }
}

// The lane's own share bookkeeping, one access to `Scheduler.lanes` each (every separate mutation of a
// lane through the array checked the array's uniqueness again).
extension Lane {
    @inline(__always) func shareIsEmpty(_ s: Int) -> Bool {
        s >= shares.count || shares[s].isEmpty
    }

    /// Inserts `e` into share `s`'s queue (made on first use), with a new front when the queue was empty
    /// or `e` is its new head at a higher priority level (as `sharedHead` judges fronts: a newer head at
    /// the same level keeps the front's place until the share's turn ends). `pass`: the share's.
    @inline(__always) mutating func insertShared(_ s: Int, _ e: ReadyEntry, pass: Int64) {
        if shares.count <= s { shares.append(contentsOf: repeatElement(ShareQueue(), count: s + 1 - shares.count)) }
        let before = shares[s].insert(e)
        if before == .min || e.key >> 59 > before >> 59 { pushFront(s, headKey: e.key, pass: pass) }
    }

    /// A new current front for share `s` whose queue's head is `headKey` (older fronts of `s` go stale).
    @inline(__always) mutating func pushFront(_ s: Int, headKey: Int64, pass: Int64) {
        shares[s].frontVersion &+= 1
        fronts.insert(ShareFront(headKey: headKey, pass: pass, slot: Int32(s), version: shares[s].frontVersion))
    }

    /// Takes the head of share `s`'s queue (the caller read it: it is there).
    @inline(__always) mutating func takeShared(_ s: Int) -> Int32 {
        shares[s].popMax()!.op
    }

    /// After a dispatch of share `s` (its front on top) whose turn goes on: the front goes when the
    /// share's queue is empty.
    @inline(__always) mutating func dropTopFrontIfEmpty(_ s: Int) {
        if shares[s].isEmpty { _ = fronts.popMax() }
    }

    /// After a dispatch of share `s` (its front on top) that ended its turn: the front is replaced by
    /// one for the queue's head at the share's new `pass`, or goes when the queue is empty.
    @inline(__always) mutating func renewTopFront(_ s: Int, pass: Int64) {
        guard let head = shares[s].max else { _ = fronts.popMax(); return }
        shares[s].frontVersion &+= 1
        _ = fronts.replaceMax(with: ShareFront(headKey: head.key, pass: pass, slot: Int32(s), version: shares[s].frontVersion))
    }
}
