import Synchronization
import WireProtocol

/// What a coordinator run with `--ha` is (issue 29, PROTOCOL.md §14): the group's leader, serving with an
/// epoch until a deadline its election keeps moving, or a standby that refuses everything with ERROR
/// NOT_LEADER naming the leader it knows.
public enum CoordinatorRole: Sendable, Equatable {
    /// Serves until `until` (µs on `CoordinatorClock`): the election renews it; past it the loop stops
    /// dispatching and answering by itself, even if no new role arrives.
    case leader(epoch: UInt64, until: Int64)
    /// Does not serve; `leader`: the leader's advertised endpoint, nil when none is elected (or known).
    case standby(leader: String?, epoch: UInt64)

    public var epoch: UInt64 {
        switch self {
        case .leader(let e, _), .standby(_, let e): e
        }
    }

    /// Serving at `now`: the leader, before its deadline.
    public func serves(at now: Int64) -> Bool {
        if case .leader(_, let until) = self { now < until } else { false }
    }

    public var description: String {
        switch self {
        case .leader(let e, _): "leader (epoch \(e))"
        case .standby(let l?, let e): "standby (leader \(l), epoch \(e))"
        case .standby(nil, _): "standby (no leader elected yet)"
        }
    }
}

/// Where the election (on its own task) leaves the role for the loop: set from any thread, then the
/// loop's waker is woken (`CoordinatorServer.setRole`); the loop reads it when the generation moved,
/// one atomic load per pass. `CoordinatorConfig.leadership` nil: no `--ha`, the loop always serves.
public final class LeadershipBox: Sendable {
    private let role = Mutex<CoordinatorRole>(.standby(leader: nil, epoch: 0))
    private let generation = Atomic<UInt64>(0)

    /// What `opctl ha status` shows besides the role (HA-REPLY), and how to step down: set by opcoord.
    private let details = Mutex(LeadershipDetails())
    private let stepDownAction = Mutex<(@Sendable () -> Void)?>(nil)

    public init() {}

    public func describe(_ update: (inout LeadershipDetails) -> Void) { details.withLock { update(&$0) } }
    var currentDetails: LeadershipDetails { details.withLock { $0 } }

    /// What `stepDown` does (the election's `stepDown`).
    public func onStepDown(_ action: @escaping @Sendable () -> Void) { stepDownAction.withLock { $0 = action } }
    func stepDown() { stepDownAction.withLock { $0 }?() }

    func set(_ r: CoordinatorRole) {
        role.withLock { $0 = r }
        generation.add(1, ordering: .releasing)
    }

    /// The role, when it changed since `seen` (which is updated).
    func changed(since seen: inout UInt64) -> CoordinatorRole? {
        let g = generation.load(ordering: .acquiring)
        guard g != seen else { return nil }
        seen = g
        return role.withLock { $0 }
    }

    public var current: CoordinatorRole { role.withLock { $0 } }
}

/// The group this coordinator campaigns in, for HA-REPLY.
public struct LeadershipDetails: Sendable, Equatable {
    public var group = ""
    public var advertise = ""
    public var store = ""
    public var electionsWon: UInt64 = 0
    public init() {}
}
