import Foundation
import Glibc
import Synchronization

/// The shell around `LeaderElection`: one task makes its requests against a `LeaseStore`, one at a
/// time, and hands every change of role to `onRole` (from that task: the receiver must not block; the
/// coordinator stores it and wakes its loop). The loop never waits on the store: a leader's role
/// carries its own serving deadline, which the loop enforces by itself even if this task is stuck.
public final class ElectionDriver: Sendable {
    public let store: LeaseStore
    private let state: Mutex<State>
    private let onRole: @Sendable (LeaderElection.Role) -> Void
    private let stopping = Atomic<Bool>(false)
    private let stepDownAsked = Atomic<Bool>(false)
    private let task = Mutex<Task<Void, Never>?>(nil)

    struct State {
        var machine: LeaderElection
        var published: LeaderElection.Role?
    }

    public init(store: LeaseStore, endpoint: String, config: LeaderElection.Config,
                onRole: @escaping @Sendable (LeaderElection.Role) -> Void) {
        self.store = store
        self.onRole = onRole
        state = Mutex(State(machine: LeaderElection(endpoint: endpoint, config: config)))
    }

    /// What `opctl ha status` shows of this node: its role, lease, elections won.
    public struct Snapshot: Sendable {
        public var role: LeaderElection.Role
        public var leaseExpiresAt: Int64?
        public var termsWon: Int
        public var ttlSeconds: Int64
    }

    public var snapshot: Snapshot {
        state.withLock { Snapshot(role: $0.machine.role, leaseExpiresAt: $0.machine.leaseExpiresAt,
                                  termsWon: $0.machine.termsWon, ttlSeconds: $0.machine.config.ttlSeconds) }
    }

    /// The lease this node holds now, if any.
    public var leaseID: Int64? { state.withLock { $0.machine.leaseID } }

    public func start() {
        let t = Task.detached { [self] in await run() }
        task.withLock { $0 = t }
    }

    /// Gives up leadership (the lease is revoked); safe from any thread.
    public func stepDown() { stepDownAsked.store(true, ordering: .relaxed) }

    /// Stops campaigning; a leader revokes its lease so the next one need not wait for it to expire.
    public func stop() async {
        stopping.store(true, ordering: .relaxed)
        await task.withLock { $0 }?.value
        let lease = state.withLock { $0.machine.leaseID }
        if let lease { _ = await store.perform(.revoke(lease: lease), timeout: .seconds(1)) }
        await store.shutdown()
    }

    private func run() async {
        let timeout = Duration.microseconds(requestTimeoutMicros)
        while !stopping.load(ordering: .relaxed) {
            let now = MonotonicClock.nowMicros()
            let step = state.withLock { s -> LeaderElection.Step in
                if stepDownAsked.exchange(false, ordering: .relaxed) { s.machine.stepDown(now: now) }
                return s.machine.next(now: now)
            }
            publish()
            switch step {
            case .send(let request):
                let answer = await store.perform(request, timeout: timeout)
                let after = MonotonicClock.nowMicros()
                state.withLock { $0.machine.answer(answer, to: request, sentAt: now, now: after) }
                publish()
            case .waitUntil(let t):
                // Short naps, so a step-down or a stop is seen within 20 ms.
                let nap = max(0, min(t - MonotonicClock.nowMicros(), 20_000))
                try? await Task.sleep(for: .microseconds(nap))
            }
        }
    }

    /// A request may take at most a third of the lease: a stuck one leaves time for retries.
    private var requestTimeoutMicros: Int64 {
        state.withLock { max(200_000, $0.machine.config.ttlSeconds * 1_000_000 / 3) }
    }

    private func publish() {
        let changed = state.withLock { s -> LeaderElection.Role? in
            guard s.published != s.machine.role else { return nil }
            s.published = s.machine.role
            return s.machine.role
        }
        if let changed { onRole(changed) }
    }
}

/// CLOCK_MONOTONIC in µs: the clock `LeaderElection`'s times are on.
public enum MonotonicClock {
    public static func nowMicros() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000 + Int64(ts.tv_nsec) / 1000
    }
}
