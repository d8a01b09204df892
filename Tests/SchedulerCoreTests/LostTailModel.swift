@testable import SchedulerCore

/// What a crash loses when the journal's last records were not durable yet (A5), as the simulation's
/// crash mode models it with `loseTails`.
///
/// The shell fsyncs each loop pass's records as one group, and only client-bound messages wait for that
/// (DurabilityGate); messages to workers do not (a dependency hop does not wait for the disk). So a
/// crash can lose the records of the last few passes — nobody was told of those changes — while workers
/// already ran dependents of a finish the journal lost. Recovery must then take back what the workers
/// report again (HeldParts lists recent finishes in the next HELLO) and the clients resend their
/// unanswered keyed SUBMITs, and nothing that ran may run again.
///
/// The model remembers, for the last `window` steps, where the journal stood after each, the keyed
/// batches submitted and the finishes workers reported; a crash cuts the journal at one of those step
/// boundaries. A crash is *strict* when every lost record can be derived again from what workers and
/// clients send (finishes reported by workers that come back, submissions, joins): then an attempt a
/// worker reports must be taken back, never refused or run again. Other lost records (a cancel, a
/// timeout, a lost worker's re-dispatch) may legitimately change what runs; those crashes only count.
struct LostTailModel {
    struct Step {
        var step: Int
        /// journalLog.count after the step.
        var journalCount: Int
        /// Its records (if any) can be derived again from what workers and clients send after a crash.
        var rederivable: Bool
    }

    struct Submit {
        var step: Int
        var ops: [OperationSpec]
        var queues: [QueueSpec]
        var key: SubmissionKey
    }

    struct Report {
        var step: Int
        var worker: UInt64
        var part: FinishedPart
    }

    /// Steps a crash may lose (a few loop passes' worth).
    static let window = 8

    private(set) var steps: [Step] = []
    private(set) var submits: [Submit] = []
    /// Finishes workers reported and kept (HeldParts keeps them at least 10 s), listed again on re-registration.
    private(set) var reports: [Report] = []
    /// Attempts the coordinator cancelled on a worker ("op/part/attempt"): the worker never offers them again.
    var cancelledOnWorker: [UInt64: Set<String>] = [:]
    /// Single-part ops a returning worker reported succeeded at the last crash, with that worker: never
    /// dispatched again while the worker lives (a lost worker's claims are void, and its ops run again).
    var claimedFinished: [String: UInt64] = [:]
    /// Whether the last crash lost only re-derivable records (a refused or repeated attempt is a violation).
    var strict = true
    /// Cut only where every lost record can be derived again (every lost tail is strict).
    var strictCuts = false
    /// A crash lost records that could not be derived again; what it changed stays changed.
    var everRelaxed = false

    var tailsLost = 0, recordsLost = 0, finishesLost = 0, submitsResent = 0, reReported = 0
    var relaxedCrashes = 0, relaxedReRuns = 0
    /// Finishes of ops whose batch the tail lost (they run again once the batch is sent again).
    var unacknowledgedRunAgain = 0

    /// Events whose records a crash may lose without changing what must happen: workers report finishes
    /// again, clients resend submissions. Not a join: a worker whose join record is lost is not awaited by
    /// the recovery, so what it reports may come after the hold has ended and its dependents' attempts
    /// were refused (ARCHITECTURE.md, "Journal and recovery", what a lost tail can still re-run).
    static func rederivable(_ e: Event) -> Bool {
        switch e {
        case .partFinished, .submit: return true
        default: return false
        }
    }

    mutating func stepDone(_ step: Int, journalCount: Int, rederivable: Bool) {
        let grew = journalCount != steps.last?.journalCount
        steps.append(Step(step: step, journalCount: journalCount, rederivable: rederivable || !grew))
        if steps.count > Self.window { steps.removeFirst(steps.count - Self.window) }
    }

    mutating func submitted(_ step: Int, ops: [OperationSpec], queues: [QueueSpec], key: SubmissionKey) {
        submits.append(Submit(step: step, ops: ops, queues: queues, key: key))
        trim(step)
    }

    mutating func reported(_ step: Int, worker: UInt64, _ part: FinishedPart) {
        reports.append(Report(step: step, worker: worker, part: part))
        trim(step)
    }

    private mutating func trim(_ step: Int) {
        let oldest = step - 4 * Self.window
        submits.removeAll { $0.step < oldest }
        reports.removeAll { $0.step < oldest }
    }

    /// A snapshot (or a recovery) made everything before it durable.
    mutating func everythingDurable() { steps.removeAll() }

    /// Where a crash cuts the journal: the journal count after the last step it keeps, and the first step
    /// it loses; nil when it keeps everything. `lose` counts the steps lost.
    func cut(losing lose: Int) -> (journalCount: Int, firstLost: Int, rederivable: Bool)? {
        guard lose > 0, steps.count > lose else { return nil }
        let kept = steps[steps.count - 1 - lose]
        let lost = steps[(steps.count - lose)...]
        return (kept.journalCount, kept.step + 1, lost.allSatisfy(\.rederivable))
    }

    /// Submissions made in or after `step`, in order.
    func submits(since step: Int) -> [Submit] { submits.filter { $0.step >= step } }

    /// Finishes `worker` reported and still keeps.
    func reports(of worker: UInt64) -> [FinishedPart] { reports.filter { $0.worker == worker }.map(\.part) }

    /// Finishes reported in or after `step`.
    func reports(since step: Int) -> [Report] { reports.filter { $0.step >= step } }

    /// A worker re-registered under a new id at `step`: its kept finishes go with it, kept anew from
    /// then (HeldParts keeps a finish for a while after it was last sent, in a FINISHED or a HELLO).
    mutating func rename(worker old: UInt64, to new: UInt64, at step: Int) {
        for i in reports.indices where reports[i].worker == old { reports[i].worker = new; reports[i].step = step }
        cancelledOnWorker[new] = cancelledOnWorker.removeValue(forKey: old)
    }

    /// The worker went silent or was lost.
    mutating func forget(worker: UInt64) { claimedFinished = claimedFinished.filter { $0.value != worker } }

    mutating func crashed() {
        submits.removeAll()
        claimedFinished.removeAll()
    }
}

extension Simulation {
    /// An attempt a returning worker reported was refused, or a finish it reported is run again.
    mutating func reRun(_ what: String) {
        if tail.strict { fail("crash \(crashCount): re-run: \(what)") } else { tail.relaxedReRuns += 1 }
    }
}
