import WireProtocol
import ZeroMQ

/// The loop's side of `--ha` (issue 29, PROTOCOL.md §14): the role the election left in the box, and
/// what the loop does while it does not serve. Without `--ha` (`CoordinatorLoop.ha` nil) none of this runs.
struct LeadershipState {
    let box: LeadershipBox
    var seen: UInt64 = 0
    var role: CoordinatorRole = .standby(leader: nil, epoch: 0)
    /// Whether this process has led yet: the journal's recovery is acted on (hold window, re-registration)
    /// only when it first leads.
    var hasLed = false
    /// The epoch stamped on what the loop sends while it leads (0 while standby: a refusal is not fenced).
    var stamp: UInt64 = 0
    /// Whether its core was reloaded from its journal since it last led (`followElected`).
    var reloaded = false
    /// The term this coordinator stepped down from: a renewal of it that the election publishes before it
    /// has revoked the lease does not make the loop serve again.
    var steppedDownEpoch: UInt64 = 0

    init(box: LeadershipBox) { self.box = box }

    /// The deadline to wake for while leading.
    var deadline: Int64 { if case .leader(_, let until) = role { until } else { .max } }
}

extension CoordinatorLoop {
    /// Takes a new role from the box (if any) and says whether the loop serves now. A leader past its
    /// deadline is a standby from this moment: nothing more is dispatched or answered.
    func leadershipServes() -> Bool {
        guard var ha else { return true }
        if var r = ha.box.changed(since: &ha.seen), r != ha.role {
            if case .leader(let e, _) = r, e == ha.steppedDownEpoch { r = .standby(leader: nil, epoch: 0) }
            let wasServing = ha.role.serves(at: now)
            ha.role = r
            if r.serves(at: now) != wasServing || r.epoch != ha.stamp {
                logger.notice("\(wasServing ? "was the leader" : "was not the leader"); now \(r.description)")
            }
        }
        let serving = ha.role.serves(at: now)
        if serving {
            ha.stamp = ha.role.epoch
        } else if ha.stamp != 0 {
            logger.warning("stopped serving: leadership (epoch \(ha.stamp)) lost or not renewed in time; refusing everything as a standby")
            ha.stamp = 0
        }
        let firstTerm = serving && !ha.hasLed
        if serving { ha.hasLed = true }
        self.ha = ha
        if serving { self.ha?.reloaded = false }
        if serving, replication.standby != nil {
            // Elected while following the last leader: its core is current; it serves at once (no recovery).
            promote(reason: "elected leader (epoch \(ha.role.epoch))")
        } else if firstTerm {
            startServing()
        } else if !serving, case .standby(let leader?, _) = ha.role {
            followElected(leader)
        }
        return serving
    }

    /// While not leading (`--ha` with a journal): follow the journal of the leader the election names, as
    /// a hot standby (Replication/), so that winning a later election needs no recovery pass. A leader that
    /// changes is followed anew; this coordinator's own address is never followed.
    func followElected(_ leader: String) {
        guard var follow = config.replication.electedFollow, leader != ha?.box.currentDetails.advertise else { return }
        if let link = replication.standby {
            if link.leader == leader { return }
            link.close(poller: poller)
            replication.standby = nil
        }
        follow.leader = leader
        do {
            if ha?.hasLed == true && !(ha?.reloaded ?? false) {
                try reloadFromJournal()
                ha?.reloaded = true
            }
            try startStandby(following: follow)
        } catch {
            if let suppressed = logLimiter.admit("follow elected", now: now) {
                logger.error("cannot follow the elected leader \(leader): \(error)\(heldBack(suppressed, "more not logged"))")
            }
        }
    }

    /// One pass while not serving: every request and HELLO is answered with ERROR NOT_LEADER, a worker
    /// of an earlier term hears DISCONNECT (so it goes to find the leader); nothing is dispatched,
    /// flushed, ticked or answered otherwise. Wakes when the role changes (the waker) or within 100 ms.
    func notLeaderPass() throws {
        waker.drain()
        while let frames = try socket.receiveMultipart(flags: .dontWait) {
            guard frames.count >= 2 else { continue }
            refuseAsStandby(Array(frames[1...]), from: frames[0])
        }
        pulse.woke(at: CoordinatorClock.nowMicros())   // time as a standby is not a hold of the loop
        try poller.poll(timeout: .microseconds(100_000))
        now = CoordinatorClock.nowMicros()
        pulse.woke(at: now)
        if handshakeMonitor != nil, poller.isReadable(2) { drainHandshakeFailures() }   // else the poll would spin
        // Following the elected leader's journal (its records go to this journal and core).
        if replication.standby != nil { try followPass() }
        if now >= nextMetricsPublish { publishMetrics(); nextMetricsPublish = now + 1_000_000 }   // the role, for /metrics
    }

    private func refuseAsStandby(_ body: [[UInt8]], from routing: [UInt8]) {
        guard let header = WireCodec.peekHeader(body) else { return }
        let text = NotLeader.text(leader: knownLeader)
        switch header.command {
        case .ha?:
            // Answered by a standby too: `opctl ha status` asks every coordinator of the group.
            guard case .success(let e) = WireCodec.decode(body), case .ha = e.message else { return }
            send(.haReply(haReply(stepDown: false)), to: routing, requestID: header.requestID)
        case .heartbeat?, .disconnect?:
            return   // a watching client's or a departing peer's: nothing to refuse
        case .credit?, .started?, .progress?, .finished?:
            var d = WireDisconnect()
            d.reason = text
            send(.disconnect(d), to: routing)
        default:
            sendError(.notLeader, text, requestID: header.requestID, command: header.commandCode, to: routing)
        }
    }

    /// HA-REPLY: this coordinator's view (PROTOCOL.md §14). `stepDown` (admin, checked before): a leader
    /// stops serving at once and its election revokes the lease.
    func haReply(stepDown: Bool) -> WireHighAvailabilityReply {
        var r = WireHighAvailabilityReply()
        r.standbys = standbyInfos()
        if !r.standbys.isEmpty { r.replication = replicationSyncing ? "sync" : "async" }
        guard let state = ha else { return r }
        let d = state.box.currentDetails
        r.enabled = true
        r.group = d.group
        r.advertise = d.advertise
        r.store = d.store
        r.electionsWon = d.electionsWon
        r.leaderEpoch = state.role.epoch
        if case .leader(_, let until) = state.role, until > now {
            r.leading = true
            r.leader = d.advertise
            r.servingLeftMs = (until - now) / 1000
            if stepDown {
                logger.notice("stepping down from leadership (epoch \(state.role.epoch)), as asked")
                state.box.stepDown()
                ha?.role = .standby(leader: nil, epoch: 0)
                ha?.steppedDownEpoch = state.role.epoch
                r.steppedDown = true
            }
        } else {
            r.leader = knownLeader ?? ""
        }
        return r
    }

    /// The leader this standby names in its refusals.
    var knownLeader: String? {
        if case .standby(let l, _)? = ha?.role { l } else { nil }
    }

    /// The epoch field (90, varint) appended to an encoded EVENT body while leading; empty otherwise.
    func epochSuffix() -> [UInt8] { EpochField.bytes(ha?.stamp ?? 0) }
}
