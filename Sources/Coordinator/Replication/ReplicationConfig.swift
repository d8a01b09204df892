import Synchronization
import ZeroMQ

/// Hot standby settings (issue 29; docs/ARCHITECTURE.md "Hot standby").
public struct ReplicationConfig: Sendable {
    public enum Mode: String, Sendable, CaseIterable {
        /// A client's acknowledgement waits until a standby in sync holds the records durably too.
        case sync
        /// Acknowledged once durable on the leader; standbys follow behind (the loss window is their lag).
        case async
    }

    public var mode: Mode = .sync
    /// In sync mode, how long an acknowledgement waits for a standby before the leader stops waiting
    /// for it (it is dropped out of sync, with a warning and `opqueue_replication_sync_fallbacks_total`)
    /// and answers on its own disk alone until the standby has caught up again (µs).
    public var syncTimeoutMicros: Int64 = 1_000_000
    /// Start as a standby of this leader (`opcoord --follow`); nil: serve.
    public var follow: FollowConfig?
    /// With `--ha` and a journal: how this coordinator follows whichever leader the election names while
    /// it does not lead (its name and keys; the leader is filled in from the election). Nil: a standby of
    /// the election only refuses (NOT_LEADER) and recovers from its own journal when it first leads.
    public var electedFollow: FollowConfig?
    /// Bound as well once promoted: the address workers and clients know (a floating address, or the old
    /// leader's on the same host), for those given only that address (with `--ha` they get every
    /// coordinator's instead).
    public var promoteBind: String?
    /// `promote()` from any thread: the loop turns a standby into the serving coordinator.
    public let promotion = PromotionSignal()

    public init() {}
}

/// The leader a standby follows and how it proves itself (a key with the `coordinator` role).
public struct FollowConfig: Sendable {
    /// The leader's endpoint, e.g. tcp://head-a:7600.
    public var leader: String
    /// The standby's name in the leader's status and logs.
    public var name: String
    /// With keys: this coordinator's key pair and the leader's public key.
    public var curve: CurveClientKeys?

    public init(leader: String, name: String, curve: CurveClientKeys? = nil) {
        self.leader = leader
        self.name = name
        self.curve = curve
    }
}

/// What other threads ask of the loop about its role: promote (an election won, `promote()`), or follow
/// another leader (`follow(leader:)`: the leader changed). Taken by the loop once a pass.
public final class PromotionSignal: Sendable {
    private let requested = Atomic<Bool>(false)
    private let newLeader = Mutex<String?>(nil)
    public init() {}
    func request() { requested.store(true, ordering: .releasing) }
    func take() -> Bool { requested.exchange(false, ordering: .acquiringAndReleasing) }
    func requestFollow(_ leader: String) { newLeader.withLock { $0 = leader } }
    func takeFollow() -> String? { newLeader.withLock { l in defer { l = nil }; return l } }
}
