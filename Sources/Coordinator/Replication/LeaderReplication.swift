import Foundation
import Journal
import WireProtocol

// The leader's side of the hot standby (issue 29; docs/ARCHITECTURE.md "Hot standby"): FOLLOW and
// REPLICA-ACK from standbys, the stream of group commits (from the journal writer's feed, or from the
// segment files and the snapshot for a standby behind), and sync mode's hold on acknowledgements.

extension CoordinatorLoop {
    /// Whether clients' acknowledgements wait for a standby now.
    var replicationSyncing: Bool { config.replication.mode == .sync && replication.followers.anyInSync }

    /// The journal batch sequence up to which client messages may go (Durability.swift): durable here
    /// and, in sync mode with a standby in sync, there too.
    func clientDurableSequence(_ journal: JournalStore) -> UInt64 {
        replication.sync.released(leaderDurable: journal.durableSequence, syncing: replicationSyncing)
    }

    /// A batch went to the journal (sync mode counts its records).
    func replicationAppended(sequence: UInt64, records: Int) {
        replication.sync.appended(sequence: sequence, records: records, now: now, waitsForStandby: replicationSyncing)
    }

    /// FOLLOW from a standby: its stream starts (again) from what it holds.
    func follow(_ f: WireFollow, from routing: [UInt8], requestID: UInt32) {
        guard let journal else {
            sendError(.unexpected, "this coordinator keeps no journal (--ephemeral): nothing to follow", requestID: requestID,
                      command: Command.follow.rawValue, to: routing)
            return
        }
        if replication.standby != nil {
            sendError(.unexpected, "this coordinator is itself a standby (following \(config.replication.follow?.leader ?? "?")): follow the leader",
                      requestID: requestID, command: Command.follow.rawValue, to: routing)
            return
        }
        let durable = journal.durableRecords
        let reader = JournalTailReader(directory: journal.directory)
        // Its last record must be ours (one record read back from the segments; unknown: trusted).
        var diverged = false
        if f.lastCrc != 0, f.fromRecord > 0, f.fromRecord <= durable, let crc = reader.crc(ofRecord: f.fromRecord - 1) {
            diverged = crc != f.lastCrc
        }
        let (id, snapshot) = replication.followers.follow(routing: routing, name: f.name, from: f.fromRecord, durable: durable,
                                                          diverged: diverged, now: now)
        replication.readers[id] = reader
        journal.replicationFeed.setActive(true)
        let why = diverged ? ": its record \(f.fromRecord - 1) is not this journal's (another history), so it gets the snapshot"
            : snapshot ? ": it holds records this journal does not, so it gets the snapshot" : ""
        logger.notice("standby '\(clipped(f.name))' follows from record \(f.fromRecord) (this journal holds \(durable))\(why)")
        if snapshot { startSnapshot(id, name: f.name) }
    }

    /// REPLICA-ACK: flow control, and the records it holds durably.
    func replicaAck(_ a: WireReplicaAck, from routing: [UInt8]) {
        guard replication.followers.index(of: routing) != nil else {
            sendError(.unexpected, "REPLICA-ACK without FOLLOW: follow first", requestID: 0, command: Command.replicaAck.rawValue, to: routing)
            return
        }
        if replication.followers.acknowledged(routing: routing, received: a.received, durable: a.durableRecord, now: now),
           let f = replication.followers.followers.first(where: { $0.routing == routing }) {
            logger.notice("standby '\(clipped(f.name))' is in sync at record \(f.durable)\(config.replication.mode == .sync ? ": acknowledgements now wait for it" : "")")
        }
        advanceSync()
    }

    /// A standby's HEARTBEAT or DISCONNECT (true: it was one of ours, handled).
    func followerMessage(_ message: Message, from routing: [UInt8]) -> Bool {
        guard let i = replication.followers.index(of: routing) else { return false }
        if case .disconnect(let d) = message {
            let f = replication.followers.followers[i]
            replication.followers.remove(routing: routing)
            replication.readers[f.id] = nil
            replication.snapshots[f.id] = nil
            logger.notice("standby '\(clipped(f.name))' left: \(clipped(d.reason))")
            if replication.followers.isEmpty { journal?.replicationFeed.setActive(false) }
            advanceSync()
        }
        return true
    }

    /// Once a loop pass: sends each standby what it may take, heartbeats idle ones, forgets silent
    /// ones, and stops waiting for a standby that does not acknowledge in time.
    func replicationPass() {
        guard let journal, !replication.followers.isEmpty else {
            replication.filesPending = false
            return
        }
        let durable = journal.durableRecords
        // What a pass may read from files for standbys behind the feed: the loop's budget is 20 ms.
        var fileBytes = ReplicationState.fileBytesPerPass
        for f in replication.followers.followers { pump(f.id, durable: durable, journal: journal, fileBytes: &fileBytes) }
        // Stopped by the budget with more to read: the next pass comes at once (`replicationDeadline`).
        replication.filesPending = fileBytes <= 0
        let heartbeat = Int64(config.heartbeatIntervalMs) * 1000
        for f in replication.followers.followers where now - f.lastSent >= heartbeat {
            send(.heartbeat, to: f.routing)
            replication.followers.sentHeartbeat(f.id, now: now)
        }
        for f in replication.followers.forgetSilent(before: now - heartbeat * Int64(config.liveness)) {
            replication.readers[f.id] = nil
            replication.snapshots[f.id] = nil
            logger.warning("standby '\(clipped(f.name))' silent for \(config.liveness) heartbeats: no longer followed (it catches up when it asks again)")
        }
        if replication.followers.isEmpty { journal.replicationFeed.setActive(false) }
        advanceSync()
        // A standby in sync that keeps acknowledgements waiting past the bound is dropped out of sync.
        if replicationSyncing, let since = replication.sync.waitingSince(leaderDurable: journal.durableSequence),
           now - since > config.replication.syncTimeoutMicros {
            let names = replication.followers.expireSync()
            replication.sync.releaseAll()
            replication.syncFallbacks += 1
            logger.warning("replication: standby \(names.joined(separator: ", ")) did not acknowledge within \(config.replication.syncTimeoutMicros / 1000) ms; acknowledging without it (async) until it has caught up again")
            releaseDurable()
        }
    }

    /// When the loop must wake to check the sync bound (nil: nothing waits for a standby).
    var replicationDeadline: Int64? {
        if replication.filesPending && !replication.followers.isEmpty { return now }
        guard replicationSyncing, let journal, let since = replication.sync.waitingSince(leaderDurable: journal.durableSequence) else {
            return replication.followers.isEmpty ? nil : now + Int64(config.heartbeatIntervalMs) * 1000
        }
        return since + config.replication.syncTimeoutMicros + 1
    }

    private func advanceSync() {
        if replicationSyncing, let held = replication.followers.replicated {
            replication.sync.replicated(through: held)
        } else {
            replication.sync.releaseAll()
        }
        releaseDurable()
    }

    private func startSnapshot(_ id: UInt64, name: String) {
        guard let journal else { return }
        guard let snap = SnapshotFile.newest(in: journal.directory) else {
            // None yet (a young journal): take one now; the standby gets it once it is written.
            if case .awaitingSnapshot? = replication.followers.followers.first(where: { $0.id == id })?.phase {} else {
                replication.followers.awaitSnapshot(id)
                logger.notice("standby '\(clipped(name))' needs a snapshot and there is none yet: taking one")
            }
            if !journal.snapshotInProgress { requestSnapshot(journal, why: "standby '\(clipped(name))' needs one") }
            return
        }
        replication.snapshots[id] = snap
        replication.followers.startSnapshot(id, number: snap.number, recordsAfter: snap.recordsAfter, total: snap.size)
        logger.notice("standby '\(clipped(name))' gets snapshot \(snap.number) (\(snap.size) bytes), then the journal from record \(snap.recordsAfter)")
    }

    /// Sends follower `id` what its window allows: snapshot pieces, then records up to `durable`.
    private func pump(_ id: UInt64, durable: UInt64, journal: JournalStore, fileBytes: inout Int) {
        while let f = replication.followers.followers.first(where: { $0.id == id }), replication.followers.mayStream(f) {
            switch f.phase {
            case .snapshot(let number, let after, let offset, let total):
                guard let snap = replication.snapshots[id], fileBytes > 0 else { return }
                fileBytes -= min(ReplicationState.pieceBytes, total - offset)
                var piece = WireSnapshotChunk()
                piece.snapshot = UInt64(number)
                piece.recordsAfter = after
                piece.offset = UInt64(offset)
                piece.total = UInt64(total)
                let data = snap.bytes(offset, ReplicationState.pieceBytes)
                piece.data = Data(data)
                send(.snapshot(piece), to: f.routing)
                replication.followers.sentSnapshot(id, bytes: data.count, now: now)
                if offset + data.count >= total { replication.snapshots[id] = nil }
            case .awaitingSnapshot:
                // Once the requested snapshot is in place (the snapshot thread writes it).
                guard !journal.snapshotInProgress, SnapshotFile.newest(in: journal.directory) != nil else { return }
                startSnapshot(id, name: f.name)
                if case .awaitingSnapshot? = replication.followers.followers.first(where: { $0.id == id })?.phase { return }
            case .streaming:
                guard f.next < durable else {
                    replication.followers.caughtUp(id, durable: durable)
                    return
                }
                if f.next > durable { return }
                var chunk = WireJournalChunk()
                chunk.firstRecord = f.next
                var lookup = journal.replicationFeed.chunks(from: f.next, maxBytes: ReplicationState.pieceBytes)
                // A group commit larger than a piece goes from the files, a piece of whole records at a
                // time: a JOURNAL message stays near 1 MiB (or one record), far below the 16 MiB limit.
                if case .chunks(let cs) = lookup, let first = cs.first, first.bytes.count > ReplicationState.pieceBytes {
                    lookup = .fromDisk(until: first.end)
                }
                switch lookup {
                case .chunks(let cs):
                    // Only what is durable here (the feed never holds more, but the count is read first).
                    let taken = cs.prefix { $0.end <= durable }
                    guard let last = taken.last else { return }
                    var bytes = Data()
                    bytes.reserveCapacity(taken.reduce(0) { $0 + $1.bytes.count })
                    for c in taken { bytes.append(contentsOf: c.bytes) }
                    chunk.records = UInt32(last.end - f.next)
                    chunk.frames = bytes
                case .fromDisk(let until):
                    guard fileBytes > 0 else { return }   // the next pass goes on
                    let reader = replication.readers[id] ?? JournalTailReader(directory: journal.directory)
                    replication.readers[id] = reader
                    switch reader.read(from: f.next, upTo: min(until ?? durable, durable), maxBytes: ReplicationState.pieceBytes) {
                    case .records(_, let count, let bytes):
                        fileBytes -= bytes.count
                        chunk.records = UInt32(count)
                        chunk.frames = Data(bytes)
                    case .gone:
                        startSnapshot(id, name: f.name)
                        continue
                    case .nothing:
                        return
                    }
                }
                send(.journal(chunk), to: f.routing)
                replication.followers.sentRecords(id, through: f.next + UInt64(chunk.records), now: now)
            }
        }
    }

    /// The standbys as STATUS shows them (leader side).
    func standbyInfos() -> [WireStandbyInfo] {
        let durable = journal?.durableRecords ?? 0
        return replication.followers.followers.map { f in
            var s = WireStandbyInfo()
            s.name = f.name
            s.durableRecord = f.durable
            s.lagRecords = durable > f.durable ? durable - f.durable : 0
            s.lagUs = UInt64(max(0, replication.followers.lagMicros(f, now: now)))
            s.state = f.state
            s.ackP50Us = UInt64(replication.followers.ackLatency(percentile: 0.5))
            s.ackP99Us = UInt64(replication.followers.ackLatency(percentile: 0.99))
            return s
        }
    }
}
