import ArgumentParser
import Coordinator
import Dispatch
import Foundation
import Leadership
import Logging
import Synchronization

/// `--ha etcd=URL[,URL…] --ha-group NAME --advertise tcp://HOST:PORT` (issue 29, docs/DEPLOY.md "High
/// availability"): campaign for the group's leadership through an etcd lease; serve only while leading.
/// Without `--ha` none of this exists and opcoord runs exactly as before.
struct HAOptions: ParsableArguments {
    @Option(name: .customLong("ha"), help: ArgumentHelp("Lead a group of coordinators through etcd: etcd=http://HOST:PORT[,http://HOST2:PORT2…] (etcd's client URLs). Only the leader serves; the others refuse every request with NOT_LEADER naming it.",
                                                          valueName: "etcd=URLS"))
    var ha: String?

    @Option(name: .customLong("ha-group"), help: "The group's name (letters, digits, '.', '_', '-'): coordinators with the same name in one etcd elect one leader.")
    var group: String?

    @Option(help: "The endpoint workers and clients reach this coordinator at (tcp://HOST:PORT, not a wildcard): what standbys name as the leader.")
    var advertise: String?

    @Option(name: .customLong("ha-lease-ttl"), help: "Seconds of the leader's etcd lease (renewed every third of it); the leader stops serving an eighth of it (at least 0.1 s) before it could expire. Takeover after a crash takes about this long.")
    var leaseTTL: Int64 = 2

    /// etcd's client URLs from `--ha`, checked.
    static func etcdURLs(_ value: String) throws -> [String] {
        guard value.hasPrefix("etcd=") else {
            throw ValidationError("--ha '\(value)' names no store: give etcd=http://HOST:PORT[,http://HOST2:PORT2] (etcd is the one supported)")
        }
        let list = value.dropFirst(5).split(separator: ",", omittingEmptySubsequences: false).map(String.init)
        guard !list.isEmpty, !list.contains(where: \.isEmpty) else {
            throw ValidationError("--ha '\(value)': give at least one etcd URL after etcd=, separated by commas (no empty ones)")
        }
        for url in list {
            if url.hasPrefix("https://") {
                throw ValidationError("--ha: \(url): https is not supported yet; reach etcd over http on a trusted network (docs/DEPLOY.md, \"High availability\")")
            }
            guard url.hasPrefix("http://"), let u = URL(string: url), let host = u.host, !host.isEmpty, let port = u.port, port > 0,
                  u.path.isEmpty || u.path == "/" else {
                throw ValidationError("--ha: '\(url)' is not an etcd client URL: give http://HOST:PORT (e.g. http://10.0.0.5:2379)")
            }
        }
        return list.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
    }

    func validate() throws {
        guard let ha else {
            if group != nil { throw ValidationError("--ha-group names a group to lead; it needs --ha etcd=URL") }
            if advertise != nil { throw ValidationError("--advertise is what standbys name as the leader; it needs --ha etcd=URL") }
            return
        }
        _ = try Self.etcdURLs(ha)
        guard let group else { throw ValidationError("--ha needs --ha-group NAME: the group whose leader this coordinator may become") }
        guard !group.isEmpty, group.count <= 128, group.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "._-".contains($0)) }) else {
            throw ValidationError("--ha-group '\(group)': use 1 to 128 letters, digits, '.', '_' or '-'")
        }
        guard let advertise else {
            throw ValidationError("--ha needs --advertise tcp://HOST:PORT: the address workers and clients reach this coordinator at")
        }
        if let problem = Self.advertiseProblem(advertise) { throw ValidationError("--advertise '\(advertise)': \(problem)") }
        guard leaseTTL >= 1, leaseTTL <= 60 else { throw ValidationError("--ha-lease-ttl must be 1 to 60 seconds") }
    }

    static func advertiseProblem(_ e: String) -> String? {
        guard e.hasPrefix("tcp://") else { return "give tcp://HOST:PORT" }
        let rest = e.dropFirst(6)
        guard let colon = rest.lastIndex(of: ":") else { return "no port: give tcp://HOST:PORT" }
        let host = rest[..<colon], port = rest[rest.index(after: colon)...]
        guard let p = Int(port), (1...65535).contains(p) else { return "the port must be a number from 1 to 65535 (not *)" }
        if host.isEmpty || host == "*" || host == "0.0.0.0" || host == "[::]" { return "a wildcard is not an address others can reach: give this host's name or address" }
        return nil
    }
}

/// The running election of `--ha`: its driver, which hands every role to the coordinator's loop.
final class HAElection: Sendable {
    let driver: ElectionDriver

    init(options: HAOptions, server: CoordinatorServer, logger: Logger) throws {
        let urls = try HAOptions.etcdURLs(options.ha!)
        let store = EtcdGateway(endpoints: urls, group: options.group!, advertise: options.advertise!)
        let config = LeaderElection.Config(ttlSeconds: options.leaseTTL)
        let box = server.config.leadership
        box?.describe { $0.group = options.group!; $0.advertise = options.advertise!; $0.store = options.ha! }
        // Elections won: a leader role with an epoch not seen before (renewals publish the same epoch).
        let lastEpoch = Mutex<Int64>(0)
        driver = ElectionDriver(store: store, endpoint: options.advertise!, config: config) { role in
            if case .leader(let epoch, _) = role, lastEpoch.withLock({ last in defer { last = epoch }; return last != epoch }) {
                box?.describe { $0.electionsWon += 1 }
            }
            server.setRole(Self.coordinatorRole(role))
        }
        box?.onStepDown { [driver] in driver.stepDown() }
        logger.info("--ha: campaigning for group '\(options.group!)' in etcd \(urls.joined(separator: ",")) as \(options.advertise!) (lease \(options.leaseTTL) s, margin \(config.marginMicros / 1000) ms)")
    }

    /// The election's role on the coordinator's clock.
    static func coordinatorRole(_ role: LeaderElection.Role) -> CoordinatorRole {
        switch role {
        case .leader(let epoch, let until):
            return .leader(epoch: UInt64(epoch), until: CoordinatorClock.nowMicros() + (until - MonotonicClock.nowMicros()))
        case .follower(let holder):
            return .standby(leader: holder?.endpoint, epoch: UInt64(holder?.epoch ?? 0))
        }
    }

    func start() { driver.start() }

    /// Stops campaigning and revokes the lease (so a standby takes over at once), waiting at most 2 s.
    func stop() {
        let done = DispatchSemaphore(value: 0)
        let driver = driver
        Task { await driver.stop(); done.signal() }
        _ = done.wait(timeout: .now() + 2)
    }
}
