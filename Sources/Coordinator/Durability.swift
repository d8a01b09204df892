import Foundation
import Journal
import Synchronization
import Logging
import SchedulerCore
import WireProtocol
import ZeroMQ

// The coordinator's side of the journal (A5; docs/ARCHITECTURE.md, "Journal and recovery"): recovery at
// start, one journal batch per loop pass (group commit on the store's writer thread), client messages
// held until what they reveal is durable, snapshots, and refusing changes while the disk fails.

/// Whether the loop wants to be woken when the journal's durable point moves: only while client
/// messages wait for it (a dependency hop writes records but waits for nothing, so it costs no wake-up).
final class DurabilityWake: Sendable {
    let wanted = Atomic<Bool>(false)
}

extension CoordinatorLoop {
    /// Opens the state directory (locked against a second coordinator) and replays it into a new core.
    static func recover(_ config: CoordinatorConfig, _ coreConfig: SchedulerConfig, waker: Waker, wake: DurabilityWake,
                        logger: Logger) throws -> (Scheduler, JournalStore?) {
        var core = Scheduler(config: coreConfig)
        guard let dir = config.stateDirectory else {
            logger.warning("no state directory (--ephemeral): a restart forgets every operation")
            return (core, nil)
        }
        // The writer thread wakes the loop after a sync only when client messages wait for one.
        // While a standby follows, every group commit wakes the loop to send it on (Replication/).
        let store = try JournalStore(directory: dir, wake: { if wake.wanted.exchange(false, ordering: .acquiringAndReleasing) { waker.wake() } },
                                     replicationWake: { waker.wake() })
        let started = ContinuousClock.now
        var stimulus: UInt64 = 0
        var ignored: [Action] = []
        let recovery = try store.recover(salvage: config.salvage, pipelined: { entry in
            stimulus &+= 1
            core.handle(Input(stimulus: stimulus, now: entry.at, .restore(entry.record)), into: &ignored)
            ignored.removeAll(keepingCapacity: true)
        })
        for note in recovery.notes { logger.warning("journal: \(note)") }
        if let loss = recovery.loss { logLoss(loss, core, logger) }
        let took = ContinuousClock.now - started
        let counts = core.runCounts
        logger.info("state directory \(dir): \(recovery.snapshotEntries) snapshot and \(recovery.tailEntries) journal records replayed in \(took) (\(recovery.bytesRead) bytes): \(core.totalOperations) operations in \(counts.retained) runs")
        return (core, store)
    }

    /// Salvage went on without acknowledged records: name the runs they touched, as far as known, and
    /// when the bytes are gone, the runs that are candidates (those still unfinished after replay).
    private static func logLoss(_ loss: JournalLoss, _ core: Scheduler, _ logger: Logger) {
        if loss.complete {
            logger.error("journal: salvage gave up acknowledged records; damaged runs: \(loss.runs.isEmpty ? "none named" : loss.runs.joined(separator: ", ")); lost operation ids: \(loss.operations.joined(separator: ", "))")
            return
        }
        let unfinished = (try? core.runInfos(limit: 10_000).get().runs.filter { $0.unfinished > 0 }.map(\.name)) ?? []
        let known = loss.runs.isEmpty ? "" : "runs known to be damaged: \(loss.runs.joined(separator: ", ")); "
        logger.error("journal: salvage gave up acknowledged records whose content is (partly) gone: \(known)runs that may have lost operations (unfinished after replay): \(unfinished.isEmpty ? "none" : unfinished.joined(separator: ", ")); runs submitted only in the lost records are gone entirely — check with their submitters")
    }

    /// Hands this pass's records to the journal's writer (one group commit may take several passes'),
    /// then sends what became durable.
    func commitJournal() {
        guard let journal else { return }
        appendBatch(to: journal, urgent: !shell.gate.isEmpty)
        releaseDurable()
        watchJournalHealth(journal)
        journalBehind = journal.bufferedBytes > Self.journalBacklogLimit
        shell.changeRefusal = shell.journalHealthy && !journalBehind ? nil : journalRefusal()
        if journal.bytesSinceSnapshot > max(config.snapshotMinBytes, 2 * journal.lastSnapshotBytes), !journal.snapshotInProgress {
            requestSnapshot(journal, why: "\(journal.bytesSinceSnapshot) bytes since the last")
        }
        for note in journal.takeNotes() { logger.notice("journal: \(note)") }
    }

    /// Hands the shell's records of this pass to the journal. Urgent when a reply waits for them; else
    /// the writer may gather a few passes into one sync.
    private func appendBatch(to journal: JournalStore, urgent: Bool) {
        guard !shell.journalBatch.isEmpty else { return }
        let sequence = journal.append(shell.journalBatch, urgent: urgent)
        shell.gate.appended(sequence)
        replicationAppended(sequence: sequence, records: shell.journalBatch.count)
        shell.journalBatch.removeAll()
    }

    /// Starts a snapshot of the core as of now (also when a standby needs one and there is none).
    func requestSnapshot(_ journal: JournalStore, why: String) {
        // A copy of the core for the snapshot thread: copy-on-write makes it cheap here; the arrays
        // this loop touches next are copied once, as it touches them.
        let copy = shell.core
        trace.mark("before snapshot request", now: CoordinatorClock.nowMicros())
        if journal.requestSnapshot({
            // On the snapshot's own thread (it ends with the snapshot): a lower priority, so that on
            // a busy machine the seconds a large snapshot takes are not taken from the loop thread.
            SnapshotThread.yieldToLoop()
            return copy.snapshotRecords().map { JournalEntry(at: $0.at, record: $0.record) }
        }) {
            logger.info("journal: snapshot of \(copy.totalOperations) operations requested (\(why))")
        }
    }

    /// Sends the held messages that are durable now; while some still wait, asks the writer for a wake-up.
    func releaseDurable() {
        guard let journal, !shell.gate.isEmpty else { return }
        shell.durable(upTo: clientDurableSequence(journal))
        sendOutput()
        guard !shell.gate.isEmpty else { return }
        durabilityWake.wanted.store(true, ordering: .releasing)
        journal.hurry()
        // Once more: a sync that ended before the flag was set woke nobody.
        shell.durable(upTo: clientDurableSequence(journal))
        sendOutput()
    }

    /// Logs the journal going bad and coming back; while it is bad, changes are refused (`journalRefusal`).
    private func watchJournalHealth(_ journal: JournalStore) {
        switch journal.health {
        case .ok where !shell.journalHealthy:
            shell.journalHealthy = true
            logger.notice("journal: writable again; everything held in memory is on disk, changes are accepted again")
        case .failing(let reason, _) where shell.journalHealthy:
            shell.journalHealthy = false
            logger.error("journal: cannot write to \(journal.directory): \(reason). Changes are refused (BUSY) until it is writable; reads go on; what was accepted is kept in memory and written when it can be")
        default:
            break
        }
    }

    /// Bytes waiting for the disk beyond which changes are refused (a disk slower than the submissions,
    /// or failing): memory stays bounded, and the client is told to come back.
    static let journalBacklogLimit = 256 << 20

    /// What a state-changing request is told while the journal cannot take it (`shell.changeRefusal`).
    private func journalRefusal() -> String {
        let reason: String
        if case .failing(let r, _)? = journal?.health {
            reason = r
        } else if journalBehind {
            reason = "\((journal?.bufferedBytes ?? 0) >> 20) MiB not yet on disk: the disk is slower than the changes"
        } else {
            reason = "not writable"
        }
        return "journal unavailable (\(reason)): nothing was changed; status and waits still work; retry when the coordinator's state directory is writable again"
    }

    /// Graceful stop: what is queued is made durable, then the state directory is unlocked.
    func closeJournal() {
        guard let journal else { return }
        appendBatch(to: journal, urgent: true)
        if !journal.close(timeout: .seconds(5)) {
            logger.error("journal: not everything was written before stopping (\(journal.health)); the last changes may be lost")
        }
        releaseDurable()
    }
}

/// The snapshot thread's priority (Linux: the nice value is per thread; `who` 0 is the calling thread).
enum SnapshotThread {
    static let nice: Int32 = 10

    static func yieldToLoop() {
        _ = setpriority(__priority_which_t(PRIO_PROCESS.rawValue), 0, nice)
    }
}
