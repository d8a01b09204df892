/// Who is behind each ROUTER routing id.
///
/// A worker gets a fresh, never-reused id at every HELLO, so a worker that re-registers is a new worker to
/// the core and anything it says about an earlier session is fenced. A routing id keeps pointing at its
/// last worker id after that worker was declared lost, so late messages (a frozen worker that wakes up)
/// still reach the core, are counted as fenced, and the worker is told to register again.
struct PeerTable {
    enum Role: Equatable { case worker(UInt64), client(UInt64) }

    private(set) var roles: [[UInt8]: Role] = [:]
    private var workerRouting: [UInt64: [UInt8]] = [:]
    private var clientRouting: [UInt64: [UInt8]] = [:]
    private var nextWorker: UInt64 = 1
    private var nextClient: UInt64 = 1

    func role(of routing: [UInt8]) -> Role? { roles[routing] }

    func routing(ofWorker id: UInt64) -> [UInt8]? { workerRouting[id] }
    func routing(ofClient id: UInt64) -> [UInt8]? { clientRouting[id] }

    /// Registers a new worker session on `routing` (replacing whatever was there).
    mutating func newWorker(routing: [UInt8]) -> UInt64 {
        let id = nextWorker
        nextWorker += 1
        roles[routing] = .worker(id)
        workerRouting[id] = routing
        return id
    }

    /// The client id of `routing`, allocated on first sight.
    mutating func client(for routing: [UInt8]) -> UInt64 {
        if case .client(let id)? = roles[routing] { return id }
        let id = nextClient
        nextClient += 1
        roles[routing] = .client(id)
        clientRouting[id] = routing
        return id
    }

    /// Forgets a worker's routing entry (after it said DISCONNECT).
    mutating func forgetWorker(_ id: UInt64) {
        if let r = workerRouting.removeValue(forKey: id), roles[r] == .worker(id) { roles[r] = nil }
    }

    var workerIDs: Dictionary<UInt64, [UInt8]>.Keys { workerRouting.keys }
}

/// The text form of worker ids on the wire and in logs ("w7").
enum WorkerName {
    static func text(_ id: UInt64) -> String { "w\(id)" }
    static func parse(_ text: String) -> UInt64? {
        guard text.first == "w" else { return nil }
        return UInt64(text.dropFirst())
    }
}
