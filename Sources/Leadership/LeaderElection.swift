/// Leadership of one group through a lease-held key (docs/ARCHITECTURE.md, "Leadership"): a pure state
/// machine, no I/O and no clock reads. The shell (`ElectionDriver`) asks `next(now:)` what to do, does it
/// (one request at a time against the `LeaseStore`), and feeds the answer back with the time the request
/// was *sent*; the machine answers with the role this node has now.
///
/// Timing (all µs on one monotonic clock):
/// - a leader renews its lease every `ttl / 3` after the last renewal was sent;
/// - it may serve until `servingDeadline` = (send time of the last successful renewal, or of the grant
///   for the first term) + ttl − `margin`. The store starts the lease's new ttl when it *processes* the
///   renewal, which is after we sent it, so the lease cannot expire before sentAt + ttl by the store's
///   clock; `margin` covers what is left: the clock-rate difference between the two hosts (ppm), the
///   time the coordinator's loop takes to notice the deadline (it wakes for it: < 1 ms) and a message
///   already on the wire when it stops. Another node can be elected only once the lease has expired,
///   so two leaders never serve at once.
/// - a follower keeps a lease of its own alive on the same schedule and tries to create the key every
///   `pollInterval` (the holder's lease expiring deletes it, so the next try after that wins).
public struct LeaderElection: Sendable {
    public struct Config: Sendable, Equatable {
        /// The lease's time to live asked for (whole seconds: the store's unit); the store may grant more.
        public var ttlSeconds: Int64
        /// How long before the lease could expire a leader stops serving (see the type's comment).
        public var marginMicros: Int64
        /// How often a follower tries to take the key.
        public var pollIntervalMicros: Int64
        /// After a failed request, the next try waits this long.
        public var retryMicros: Int64
        /// After stepping down, this node does not campaign for this long, so another one takes over.
        public var stepDownHoldMicros: Int64

        public init(ttlSeconds: Int64 = 2, marginMicros: Int64? = nil, pollIntervalMicros: Int64 = 100_000,
                    retryMicros: Int64 = 100_000, stepDownHoldMicros: Int64? = nil) {
            self.ttlSeconds = ttlSeconds
            self.marginMicros = marginMicros ?? Self.defaultMargin(ttlMicros: ttlSeconds * 1_000_000)
            self.pollIntervalMicros = pollIntervalMicros
            self.retryMicros = retryMicros
            self.stepDownHoldMicros = stepDownHoldMicros ?? ttlSeconds * 1_000_000
        }

        /// An eighth of the ttl, at least 100 ms: far above clock-rate drift (≤ 0.05 % over a lease) and
        /// the loop's reaction time, small enough that a leader cut off keeps most of its lease's time
        /// for retries (two renewals of three can fail before it stops).
        public static func defaultMargin(ttlMicros: Int64) -> Int64 { max(100_000, ttlMicros / 8) }
    }

    /// What this node is (`ElectionDriver` hands it to the coordinator on every change).
    public enum Role: Sendable, Equatable {
        /// Serves, with `epoch`, until `until` (µs, the machine's clock) unless renewed before.
        case leader(epoch: Int64, until: Int64)
        /// Does not serve; `leader` is the holder's advertised endpoint and epoch when known.
        case follower(leader: Holder?)
    }

    public struct Holder: Sendable, Equatable {
        public var endpoint: String
        public var epoch: Int64
        public init(endpoint: String, epoch: Int64) { self.endpoint = endpoint; self.epoch = epoch }
    }

    /// One request for the shell to make now.
    public enum Request: Sendable, Equatable {
        case grant(ttlSeconds: Int64)
        /// Create the key with this lease if nobody holds it; else read the holder.
        case campaign(lease: Int64)
        case renew(lease: Int64)
        case revoke(lease: Int64)
    }

    /// What `next(now:)` says: make this request now, or wait (at most) until then.
    public enum Step: Sendable, Equatable {
        case send(Request)
        case waitUntil(Int64)
    }

    /// The answers the shell feeds back, each with the time its request was sent.
    public enum Answer: Sendable, Equatable {
        case granted(lease: Int64, ttlSeconds: Int64)
        /// We hold the key now, or still: created at revision `epoch` (the key's create_revision).
        case won(epoch: Int64)
        /// Someone holds it (`holder` nil: it vanished between the compare and the read; try again).
        case lost(holder: Holder?)
        /// The lease was renewed for `ttlSeconds` more; 0 means it had expired or was revoked.
        case renewed(ttlSeconds: Int64)
        case revoked
        /// The request failed (store unreachable, timeout, an error answer); `leaseGone`: the store said
        /// the lease does not exist (so it must be granted again).
        case failed(leaseGone: Bool)
    }

    public let config: Config
    public let endpoint: String
    public private(set) var role: Role = .follower(leader: nil)

    private var lease: Int64?
    private var ttlMicros: Int64 = 0
    /// When the last successful renewal (or the grant) of the current lease was sent.
    private var renewedSentAt: Int64 = 0
    private var nextRenew: Int64 = 0
    private var nextCampaign: Int64 = 0
    private var retryAt: Int64 = 0
    private var stepDownRequested = false
    /// Elections this node won (for metrics).
    public private(set) var termsWon = 0

    public init(endpoint: String, config: Config = Config()) {
        self.endpoint = endpoint
        self.config = config
    }

    public var isLeader: Bool { if case .leader = role { true } else { false } }

    /// The lease's id while this node has one (for `opctl ha status`).
    public var leaseID: Int64? { lease }

    /// The time the lease could expire at the earliest (µs), while this node has one.
    public var leaseExpiresAt: Int64? { lease == nil ? nil : renewedSentAt + ttlMicros }

    /// Asks to give up leadership: the lease is revoked (which deletes the key), and this node waits
    /// `stepDownHoldMicros` before campaigning again. Stops serving at once.
    public mutating func stepDown(now: Int64) {
        guard isLeader else { return }
        stepDownRequested = true
        role = .follower(leader: nil)
        nextCampaign = now + config.stepDownHoldMicros
    }

    /// What to do now. A leader whose deadline has passed becomes a follower here, so the role the
    /// shell reads after this call is the one to serve by.
    public mutating func next(now: Int64) -> Step {
        expireIfDue(now: now)
        if now < retryAt { return .waitUntil(min(retryAt, servingDeadline ?? .max)) }
        guard let lease else { return .send(.grant(ttlSeconds: config.ttlSeconds)) }
        if stepDownRequested { return .send(.revoke(lease: lease)) }
        if now >= nextRenew { return .send(.renew(lease: lease)) }
        if !isLeader {
            if now >= nextCampaign { return .send(.campaign(lease: lease)) }
            return .waitUntil(min(nextRenew, nextCampaign))
        }
        return .waitUntil(min(nextRenew, servingDeadline ?? .max))
    }

    /// Until when the leader may serve (nil when not leading).
    public var servingDeadline: Int64? {
        if case .leader(_, let until) = role { until } else { nil }
    }

    /// The answer to `request`, sent at `sentAt`, arriving at `now`.
    public mutating func answer(_ answer: Answer, to request: Request, sentAt: Int64, now: Int64) {
        defer { expireIfDue(now: now) }
        switch (request, answer) {
        case (.grant, .granted(let id, let ttl)):
            lease = id
            ttlMicros = ttl * 1_000_000
            renewedSentAt = sentAt
            nextRenew = sentAt + ttlMicros / 3
            nextCampaign = max(nextCampaign, now)
        case (.campaign(let id), .won(let epoch)) where id == lease:
            // The lease was alive when the store wrote or compared the key: it runs from our last renewal.
            if !isLeader { termsWon += 1 }
            role = .leader(epoch: epoch, until: deadline)
        case (.campaign(let id), .lost(let holder)) where id == lease:
            role = .follower(leader: holder)
            nextCampaign = now + config.pollIntervalMicros
        case (.renew(let id), .renewed(let ttl)) where id == lease:
            guard ttl > 0 else { return leaseGone(now: now) }
            ttlMicros = ttl * 1_000_000
            renewedSentAt = max(renewedSentAt, sentAt)
            nextRenew = renewedSentAt + ttlMicros / 3
            if case .leader(let epoch, _) = role { role = .leader(epoch: epoch, until: deadline) }
        case (.revoke(let id), .revoked) where id == lease:
            stepDownRequested = false
            lease = nil
            role = .follower(leader: nil)
        case (_, .failed(let gone)):
            if gone { return leaseGone(now: now) }
            if case .revoke = request {
                // The revoke may not have happened: the lease runs out by itself; forget it either way.
                stepDownRequested = false
                lease = nil
            }
            retryAt = now + config.retryMicros
        default:
            break   // an answer about a lease we no longer hold: ignored
        }
    }

    private var deadline: Int64 { renewedSentAt + ttlMicros - config.marginMicros }

    private mutating func leaseGone(now: Int64) {
        lease = nil
        stepDownRequested = false
        if isLeader { role = .follower(leader: nil) }
        retryAt = now   // grant again at once
    }

    private mutating func expireIfDue(now: Int64) {
        if case .leader(_, let until) = role, now >= until { role = .follower(leader: nil) }
    }
}
