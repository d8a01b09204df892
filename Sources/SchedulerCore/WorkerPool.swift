import DequeModule

// The worker pool: every worker the core has known, by index (never reused: a lost worker keeps its
// place, so an op can name the worker that ran it), the index by session id, and the placement classes
// (a kind plus the tags it requires), each with its capable workers, their credit and a round-robin of
// those that have credit. The pool owns credit: a grant, a dispatch and a loss move the worker's, its
// classes' and the total together, so the three cannot disagree (`Scheduler.validate` checks them).
// What it may not decide alone — which queues a grant wakes — it hands back (`giveCredit`).

struct WorkerPool: RandomAccessCollection, MutableCollection {
    private var all: [WorkerState] = []
    /// Live and lost workers by session id (sessions restored from the journal are not listed: a new
    /// session may reuse the id).
    private(set) var byID: [UInt64: WorkerIndex] = [:]
    /// Credit of every live worker.
    private(set) var totalCredit = 0
    private(set) var liveCount = 0

    /// Kinds by name (interned when an op uses one) and their names by number.
    private var kindIndex: [String: Int32] = [:]
    private(set) var kindNames: [String] = []
    /// Tag bits by name, interned when an op requires the tag (at most 64).
    private(set) var tagBits: [String: Int] = [:]
    /// Placement classes by number (dispatch parks queues on a class that has no credit: `park`).
    private(set) var classes: [PlacementClass] = []
    /// Classes by a hash of (kind, required tags); see `placementClass`.
    private var classIndex: [UInt64: Int32] = [:]
    /// Queues parked on classes that a grant gave credit (`giveCredit`), until `takeUnparked`.
    private var unparked: [QueueIndex] = []

    var startIndex: Int { 0 }
    var endIndex: Int { all.count }

    subscript(_ i: Int) -> WorkerState {
        @inline(__always) get { all[i] }
        @inline(__always) _modify { yield &all[i] }
    }

    subscript(_ w: WorkerIndex) -> WorkerState {
        @inline(__always) get { all[w.index] }
        @inline(__always) _modify { yield &all[w.index] }
    }

    static func capable(_ w: WorkerState, _ c: PlacementClass) -> Bool {
        w.alive && w.kinds.contains(c.kind) && (c.requires & ~w.tags) == 0
    }

    // MARK: Joining and leaving

    /// A new live session (`hello` checked by the caller: its id unused); its index. Only tags and kinds
    /// that ops use are interned; the others wait as names (`WorkerState.tagNames`, `kindNames`).
    mutating func join(_ hello: WorkerHello, capacity: Int, at now: Int64) -> WorkerIndex {
        var mask: UInt64 = 0
        for t in hello.tags { if let b = tagBits[t] { mask |= 1 << UInt64(b) } }
        let kinds = Set(hello.kinds.compactMap { kindIndex[$0] })
        let w = WorkerIndex(all.count)
        all.append(WorkerState(id: hello.worker, name: hello.name, owner: hello.owner, slots: hello.slots, capacity: capacity,
                               tags: mask, kinds: kinds, tagNames: Set(hello.tags), kindNames: Set(hello.kinds), lastSeen: now))
        byID[hello.worker] = w
        liveCount += 1
        for c in classes.indices where Self.capable(all[w.index], classes[c]) {
            classes[c].capable.append(w)
            all[w.index].classes.append(Int32(c))
        }
        return w
    }

    /// A session of before a restart, never alive, not found by id; its index.
    mutating func restore(_ worker: WorkerState) -> WorkerIndex {
        precondition(!worker.alive, "a restored session is never alive")
        all.append(worker)
        return WorkerIndex(all.count - 1)
    }

    /// Worker `w` is lost: its credit goes, what the peer sent is released; the part keys it held, in
    /// dispatch order (they may be stale), for the caller to take back.
    mutating func lose(_ w: WorkerIndex, _ reason: String) -> [UInt64] {
        takeCredit(w, all[w.index].credit)
        all[w.index].alive = false
        all[w.index].lostReason = reason
        all[w.index].tagNames = []
        all[w.index].kindNames = []
        liveCount -= 1
        let held = all[w.index].held
        all[w.index].held = []
        return held
    }

    /// Moves every live worker's last-seen time forward by `micros` (never past `now`).
    mutating func excuseSilence(_ micros: Int64, now: Int64) {
        for i in all.indices where all[i].alive {
            all[i].lastSeen = Swift.min(now, all[i].lastSeen &+ micros)
        }
    }

    // MARK: Credit

    /// Adds credit, never beyond what the worker may hold (`capacity` − parts it holds): extra credit
    /// from a greedy or buggy worker is ignored. True when a class that had none got some while queues
    /// were parked on it: `takeUnparked` gives them.
    @inline(__always)
    mutating func giveCredit(_ w: WorkerIndex, _ grant: Int) -> Bool {
        let n = Swift.min(grant, all[w.index].capacity - all[w.index].inflightCount - all[w.index].credit)
        guard n > 0 else { return false }
        let wasZero = all[w.index].credit == 0
        all[w.index].credit += n
        totalCredit += n
        if wasZero { all[w.index].creditEpoch &+= 1 }
        let ep = all[w.index].creditEpoch
        var woke = false
        for c32 in all[w.index].classes {
            let c = Int(c32)
            let before = classes[c].credit
            classes[c].credit += n
            if wasZero { classes[c].rr.append((w, ep)) }
            if before <= 0 && !classes[c].parked.isEmpty {
                unparked.append(contentsOf: classes[c].parked)
                classes[c].parked.removeAll(keepingCapacity: true)
                woke = true
            }
        }
        return woke
    }

    /// Queue `q` waits for class `c` to get credit (it has none): the grant that gives it some wakes `q`
    /// (`giveCredit`). A class with credit parks nothing (no grant would wake it).
    mutating func park(_ q: QueueIndex, onClass c: Int) {
        if classes[c].credit <= 0 { classes[c].parked.append(q) }
    }

    /// The queues the last grants woke (`giveCredit`), taken.
    mutating func takeUnparked() -> [QueueIndex] {
        defer { unparked.removeAll(keepingCapacity: true) }
        return unparked
    }

    @inline(__always)
    mutating func takeCredit(_ w: WorkerIndex, _ n: Int) {
        all[w.index].credit -= n
        totalCredit -= n
        for c in all[w.index].classes { classes[Int(c)].credit -= n }
    }

    /// The next worker of class `c` with credit, round-robin (the class has credit).
    mutating func pickWorker(_ c: Int) -> WorkerIndex {
        while let (w, ep) = classes[c].rr.first {
            classes[c].rr.removeFirst()
            // Field reads only: copying a WorkerState would retain its collections.
            let credit = all[w.index].credit
            if all[w.index].alive && credit > 0 && all[w.index].creditEpoch == ep {
                if credit > 1 { classes[c].rr.append((w, ep)) }
                return w
            }
        }
        preconditionFailure("class credit > 0 but no worker in round-robin")
    }

    // MARK: Placement

    /// Kinds are interned when an op uses them; live workers that named the kind in HELLO get it then.
    mutating func internKind(_ k: String) -> Int32 {
        if let i = kindIndex[k] { return i }
        let i = Int32(kindNames.count)
        kindNames.append(k); kindIndex[k] = i
        for w in all.indices where all[w].alive && all[w].kindNames.contains(k) { all[w].kinds.insert(i) }
        return i
    }

    /// Tag bit, or nil when 64 distinct tags are already in use. Interned when an op requires the tag;
    /// live workers that have it get the bit then.
    mutating func internTag(_ t: String) -> Int? {
        if let b = tagBits[t] { return b }
        guard tagBits.count < 64 else { return nil }
        let b = tagBits.count
        tagBits[t] = b
        for w in all.indices where all[w].alive && all[w].tagNames.contains(t) { all[w].tags |= 1 << UInt64(b) }
        return b
    }

    mutating func placementClass(kind: Int32, requires: UInt64) -> Int32 {
        // Classes are few; key mixes kind and tag mask.
        let key = UInt64(UInt32(kind)) &* 0x9E37_79B9_7F4A_7C15 ^ requires
        if let c = classIndex[key], classes[Int(c)].kind == kind, classes[Int(c)].requires == requires { return c }
        for (i, c) in classes.enumerated() where c.kind == kind && c.requires == requires { return Int32(i) }
        let c = Int32(classes.count)
        var pc = PlacementClass(kind: kind, requires: requires)
        for w in all.indices where Self.capable(all[w], pc) {
            pc.capable.append(WorkerIndex(w))
            all[w].classes.append(c)
            if all[w].credit > 0 {
                pc.credit += all[w].credit
                pc.rr.append((WorkerIndex(w), all[w].creditEpoch))
            }
        }
        classes.append(pc)
        if classIndex[key] == nil { classIndex[key] = c }
        return c
    }
}
