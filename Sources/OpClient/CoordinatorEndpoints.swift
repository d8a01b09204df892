import WireProtocol
import ZeroMQ

/// The coordinators a worker or client may reach (issue 29): `tcp://a:7600,tcp://b:7600` (`--connect`,
/// `$OPCOORD`, the Swift API), the one in use, and where to go next. A standby's ERROR NOT_LEADER names
/// the leader: that is tried next (it need not be in the list); else the next one of the list.
public struct CoordinatorEndpoints: Sendable, Equatable {
    public let all: [String]
    public private(set) var current: String
    /// Endpoints that failed (unreachable) since the last success: a redirect to one of them is not followed.
    public private(set) var failed: Set<String> = []

    /// `list`: one endpoint or several separated by commas; each normalised (`HOST:PORT` → `tcp://HOST:PORT`).
    public init(_ list: String) {
        let parts = list.split(separator: ",").map { CoordinatorConnection.normalised(String($0)) }.filter { !$0.isEmpty }
        all = parts.isEmpty ? [CoordinatorConnection.normalised(list)] : parts
        current = all[0]
    }

    public var isSeveral: Bool { all.count > 1 }

    /// Told NOT_LEADER by `current`: go to the leader it names, unless that one failed already (then
    /// stay: this standby will lead or learn the leader). Returns whether `current` changed.
    public mutating func redirect(to leader: String?) -> Bool {
        guard let leader, leader != current, !failed.contains(leader) else { return false }
        current = leader
        return true
    }

    /// `current` could not be reached: mark it and move to the next endpoint of the list (round robin);
    /// returns whether `current` changed. With every endpoint failed the marks are cleared (try again).
    public mutating func unreachable() -> Bool {
        failed.insert(current)
        if all.allSatisfy(failed.contains) { failed.removeAll() }
        guard all.count > 1 else { return false }
        let start = all.firstIndex(of: current).map { $0 + 1 } ?? 0
        for i in 0..<all.count {
            let e = all[(start + i) % all.count]
            if e != current && !failed.contains(e) { current = e; return true }
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
