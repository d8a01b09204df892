import Foundation
import Journal
import SchedulerCore
import WireProtocol
import ZeroMQ

/// A standby's connection to its leader (issue 29): one DEALER, polled by the standby's own loop.
/// `opcoord --follow` starts it at once; with `--ha` the election does, for whichever leader it names
/// (`CoordinatorLoop.followElected`), and ends it by promotion when this coordinator is elected.
final class StandbyLink {
    var leader: String
    let name: String
    let socket: Socket
    let pollIndex: Int
    var position: StandbyPosition
    var lastHeard: Int64
    var lastFollow: Int64 = 0
    /// What it last told the leader it holds durably, and the messages received then.
    var ackedDurable: UInt64 = .max
    var ackedReceived: UInt64 = 0
    var recordsApplied: UInt64 = 0

    init(config: FollowConfig, context: Context, poller: Poller, position: UInt64, now: Int64) throws {
        leader = config.leader
        name = config.name
        socket = try Socket(context, type: .dealer)
        if let curve = config.curve { try socket.useCurveClient(curve) }
        try socket.set(.linger, 0)
        try socket.set(.maxMessageSize, WireLimits.socketMaxMessageSize)
        try socket.connect(config.leader)
        pollIndex = poller.add(socket)
        self.position = StandbyPosition(position: position)
        lastHeard = now
    }

    func send(_ message: Message) {
        _ = try? socket.sendMultipart(WireCodec.encode(message, requestID: 0), flags: .dontWait)
    }

    func close(poller: Poller) {
        poller.setEvents([], at: pollIndex)
        try? socket.disconnect(leader)
    }
}

extension CoordinatorLoop {
    /// With `--follow`: connects to the leader and asks for the journal from this one's durable position.
    func startStandby() throws {
        guard let follow = config.replication.follow else { return }
        try startStandby(following: follow)
    }

    /// Follows `follow.leader`'s journal from this one's durable position (`--follow`, or the leader an
    /// election names: `CoordinatorLoop.followElected`).
    func startStandby(following follow: FollowConfig) throws {
        guard let journal else { return }
        let link = try StandbyLink(config: follow, context: zmqContext, poller: poller, position: journal.durableRecords, now: now)
        replication.standby = link
        logger.notice("standby: following \(follow.leader) as '\(follow.name)' from record \(journal.durableRecords); serving no requests until promoted (opctl ha promote)")
        refollow(link)
    }

    private func refollow(_ link: StandbyLink) {
        var f = WireFollow()
        f.fromRecord = link.position.position
        f.name = link.name
        // Its last record's CRC, so a leader on another history is noticed (0: not in a segment here).
        if f.fromRecord > 0, let journal {
            f.lastCrc = JournalTailReader(directory: journal.directory).crc(ofRecord: f.fromRecord - 1) ?? 0
        }
        link.position.followed()
        link.lastFollow = now
        link.ackedDurable = .max
        link.send(.follow(f))
    }

    /// Once a loop pass on a standby: what the leader sent, acknowledgements, and a silent leader.
    func followPass() throws {
        guard let link = replication.standby else { return }
        // A bounded burst, like the ROUTER's: the rest waits for the next pass.
        for _ in 0..<256 {
            guard let frames = try link.socket.receiveMultipart(flags: .dontWait) else { break }
            link.lastHeard = now
            switch WireCodec.decode(frames) {
            case .success(let envelope): try standbyReceived(envelope.message, link)
            case .failure(let e): logger.warning("standby: undecodable message from the leader: \(e)")
            }
            guard replication.standby != nil else { return }
        }
        acknowledge(link)
        let silence = Int64(config.heartbeatIntervalMs) * 1000 * Int64(config.liveness)
        if now - link.lastHeard > silence && now - link.lastFollow > silence {
            if let suppressed = logLimiter.admit("leader silent", now: now) {
                logger.warning("standby: leader \(link.leader) silent for \((now - link.lastHeard) / 1000) ms; asking again from record \(link.position.position)\(heldBack(suppressed, "more such lines not logged"))")
            }
            refollow(link)
        }
    }

    /// Tells the leader what arrived and what is durable, when either moved.
    private func acknowledge(_ link: StandbyLink) {
        guard let journal else { return }
        let durable = journal.durableRecords
        guard durable != link.ackedDurable || link.position.received != link.ackedReceived else { return }
        var a = WireReplicaAck()
        a.received = link.position.received
        a.durableRecord = durable
        link.send(.replicaAck(a))
        link.ackedDurable = durable
        link.ackedReceived = link.position.received
    }

    private func standbyReceived(_ message: Message, _ link: StandbyLink) throws {
        switch message {
        case .journal(let c):
            switch link.position.journal(first: c.firstRecord, records: Int(c.records)) {
            case .apply(let skip):
                let bytes = [UInt8](c.frames)
                let entries: [JournalEntry]
                do { entries = try StandbyJournal.entries(framed: bytes, count: Int(c.records)) } catch {
                    logger.error("standby: \(error); asking again from record \(c.firstRecord)")
                    link.position = StandbyPosition(position: c.firstRecord)
                    refollow(link)
                    return
                }
                applyFromLeader(skip == 0 ? JournalBatch(framed: bytes, count: entries.count) : reframed(entries[skip...]),
                                entries: entries[skip...])
            case .ignore, .collecting, .install:
                break
            case .refollow:
                refollow(link)
            }
        case .snapshot(let s):
            switch link.position.snapshotPiece(number: Int(s.snapshot), recordsAfter: s.recordsAfter, offset: Int(s.offset),
                                               total: Int(s.total), data: [UInt8](s.data)) {
            case .install(let number, let after):
                try installSnapshot(number: number, recordsAfter: after, bytes: link.position.snapshotBytes)
                link.position.installed(recordsAfter: after)
            case .refollow: refollow(link)
            default: break
            }
        case .heartbeat:
            link.ackedDurable = .max   // answered with an acknowledgement: the leader counts it as alive
        case .error(let e):
            // The leader forgot this standby (it was silent): ask again at once.
            if e.command == UInt32(Command.replicaAck.rawValue) {
                refollow(link)
                return
            }
            if let suppressed = logLimiter.admit("leader error \(e.code)", now: now) {
                logger.error("standby: the leader \(link.leader) refused: \(clipped(e.message))\(heldBack(suppressed, "more not logged"))")
            }
        case .disconnect(let d):
            logger.notice("standby: the leader \(link.leader) is leaving (\(clipped(d.reason)))")
        default:
            logger.warning("standby: unexpected \(message.command) from the leader")
        }
    }

    private func reframed(_ entries: ArraySlice<JournalEntry>) -> JournalBatch {
        var b = JournalBatch()
        for e in entries { b.add(e) }
        return b
    }

    /// Records from the leader (checked and decoded): into this journal byte for byte, then into this
    /// core as replay puts them (no recovery pass at takeover). The journal first: its fdatasync, which
    /// the leader's acknowledgements wait for in sync mode, runs while the core replays.
    private func applyFromLeader(_ batch: JournalBatch, entries: ArraySlice<JournalEntry>) {
        guard let journal, !batch.isEmpty else { return }
        // Wake this loop when it is durable, to acknowledge it.
        durabilityWake.wanted.store(true, ordering: .releasing)
        _ = journal.append(batch, urgent: true)
        var ignored: [Action] = []
        for e in entries {
            shell.stimulus &+= 1
            core.handle(Input(stimulus: shell.stimulus, now: e.at, .restore(e.record)), into: &ignored)
            ignored.removeAll(keepingCapacity: true)
        }
        replication.standby?.recordsApplied += UInt64(entries.count)
    }

    /// The whole snapshot arrived: the state directory starts again from it, and so does the core.
    private func installSnapshot(number: Int, recordsAfter: UInt64, bytes: [UInt8]) throws {
        guard let old = journal, let dir = config.stateDirectory else { return }
        let coreConfig = core.config
        old.close()
        journal = nil
        let moved = try StandbyJournal.install(snapshot: bytes, number: number, recordsAfter: recordsAfter, in: dir)
        (core, journal) = try Self.recover(config, coreConfig, waker: waker, wake: durabilityWake, logger: logger)
        logger.notice("standby: installed the leader's snapshot \(number) (\(bytes.count) bytes, record \(recordsAfter))\(moved.map { "; what this state directory held before is in \($0)/" } ?? "")")
    }

    /// A deposed leader about to follow the next one (`--ha`): its core starts again from what its journal
    /// holds durably, as a restart would, so nothing it held only in memory while it served (claims,
    /// timers) is mixed with the new leader's records.
    func reloadFromJournal() throws {
        guard let old = journal else { return }
        let coreConfig = core.config
        old.close()   // what was queued is written first
        journal = nil
        (core, journal) = try Self.recover(config, coreConfig, waker: waker, wake: durabilityWake, logger: logger)
        // Replies it held for durability were never sent, so nothing was acknowledged by them; their tags
        // counted the old journal's batches. The clients time out and ask the next leader.
        shell.dropHeldForDurability()
        logger.notice("no longer the leader: state reloaded from this journal (\(core.totalOperations) operations) to follow the next one")
    }

    /// Turns this standby into the serving coordinator at once: its core is current, so there is no
    /// recovery pass; workers re-register with what they hold (PROTOCOL.md §7.4) within the hold.
    /// Returns false if it is not a standby.
    @discardableResult
    func promote(reason: String) -> Bool {
        guard let link = replication.standby else { return false }
        link.close(poller: poller)
        replication.standby = nil
        now = CoordinatorClock.nowMicros()
        shell.restoreWorkerSessions()
        feed(.recovered)
        if let extra = config.replication.promoteBind {
            do { try socket.bind(extra) } catch {
                logger.error("promoted, but cannot also listen on \(extra) (--promote-bind): \(error); workers and clients must be pointed at \(endpoint)")
            }
        }
        let records = journal?.durableRecords ?? 0
        logger.notice("promoted (\(reason)): serving as the coordinator, no longer following \(link.leader); journal at record \(records), \(core.totalOperations) operations\(core.holdingUntil.map { "; dispatch waits up to \(($0 - now) / 1000) ms for the workers to re-register" } ?? "")")
        return true
    }

    /// PROMOTE (`opctl ha promote`).
    func promoteRequest(from routing: [UInt8], requestID: UInt32) {
        guard replication.standby != nil else {
            sendError(.unexpected, "this coordinator is not a standby: nothing to promote", requestID: requestID,
                      command: Command.promote.rawValue, to: routing)
            return
        }
        promote(reason: "PROMOTE request")
        var a = WireAck()
        a.affected = 1
        send(.ack(a), to: routing, requestID: requestID)
    }

    /// `CoordinatorServer.follow(leader:)`: the same link, to another leader, from where it is.
    func followInstead(_ leader: String) {
        guard let link = replication.standby else {
            logger.error("asked to follow \(leader), but this coordinator serves: restart it with --follow \(leader) to make it a standby")
            return
        }
        guard leader != link.leader else { return }
        try? link.socket.disconnect(link.leader)
        do { try link.socket.connect(leader) } catch {
            logger.error("standby: cannot connect to \(leader): \(error); still following \(link.leader)")
            try? link.socket.connect(link.leader)
            return
        }
        logger.notice("standby: now following \(leader) (was \(link.leader)) from record \(link.position.position)")
        link.leader = leader
        link.lastHeard = now
        refollow(link)
    }

    /// A standby stopping says so, so the leader stops waiting for it at once.
    func leaveLeader() {
        guard let link = replication.standby else { return }
        var d = WireDisconnect()
        d.reason = "standby stopping"
        try? link.socket.set(.linger, 200)
        link.send(.disconnect(d))
        link.socket.close()
    }

    /// While a standby: what it answers instead of serving (nil: it handles the message).
    func standbyRefusal(_ message: Message) -> String? {
        guard let link = replication.standby else { return nil }
        switch message {
        case .promote, .journal, .snapshot, .heartbeat, .disconnect, .error: return nil
        default:
            return "standby: this coordinator follows the leader \(link.leader) and serves no requests until it is promoted; use \(link.leader)"
        }
    }
}
