import WireProtocol
import ZeroMQ

/// The coordinators a worker or client may reach (issue 29): `tcp://a:7600,tcp://b:7600` (`--connect`,
/// `$OPCOORD`, the Swift API), the one in use, and where to go next. A standby's ERROR NOT_LEADER names
/// the leader: that is tried next (it need not be in the list); else the next one of the list.
public struct CoordinatorEndpoints: Sendable, Equatable {
    public let all: [String]
    public private(set) var current: String
    /// Endpoints that failed (unreachable) since the last success, with the redirects to each refused since.
    public private(set) var failed: [String: Int] = [:]
    /// A redirect to an endpoint that failed is followed after this many refusals: the standby named it
    /// that often, so it may be right (the failure was the network's, not a dead leader's, whose lease
    /// expires and which standbys then stop naming).
    public static let redirectPatience = 10

    /// `list`: one endpoint or several separated by commas; each normalised (`HOST:PORT` → `tcp://HOST:PORT`).
    public init(_ list: String) {
        let parts = list.split(separator: ",").map { CoordinatorConnection.normalised(String($0)) }.filter { !$0.isEmpty }
        all = parts.isEmpty ? [CoordinatorConnection.normalised(list)] : parts
        current = all[0]
    }

    public var isSeveral: Bool { all.count > 1 }

    /// Told NOT_LEADER by `current`: go to the leader it names. One that failed is not followed (the
    /// standby may not know yet that it died: ask it again) until it was named `redirectPatience` times.
    /// Returns whether `current` changed.
    public mutating func redirect(to leader: String?) -> Bool {
        guard let leader, leader != current else { return false }
        if let refused = failed[leader] {
            guard refused + 1 >= Self.redirectPatience else { failed[leader] = refused + 1; return false }
            failed[leader] = nil
        }
        current = leader
        return true
    }

    /// `current` could not be reached: mark it and move to the next endpoint of the list (round robin);
    /// returns whether `current` changed. With every endpoint failed the marks are cleared (try again).
    public mutating func unreachable() -> Bool {
        failed[current] = 0
        if all.allSatisfy({ failed[$0] != nil }) { failed.removeAll() }
        guard all.count > 1 else { return false }
        let start = all.firstIndex(of: current).map { $0 + 1 } ?? 0
        for i in 0..<all.count {
            let e = all[(start + i) % all.count]
            if e != current && failed[e] == nil { current = e; return true }
        }
        return false
    }

    /// `current` answered: forget the failures.
    public mutating func reached() { failed.removeAll() }

    /// The first endpoint of the list with a problem (`EndpointScope.connectProblem`), if any.
    public func problem() -> (endpoint: String, problem: String)? {
        for e in all { if let p = EndpointScope.connectProblem(e) { return (e, p) } }
        return nil
    }
}
