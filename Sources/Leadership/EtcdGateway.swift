import AsyncHTTPClient
import Foundation
import NIOCore

/// The store `ElectionDriver` makes `LeaderElection`'s requests against. etcd is the one built
/// (`EtcdGateway`); a Kubernetes Lease could stand behind the same four requests (docs/ARCHITECTURE.md).
public protocol LeaseStore: Sendable {
    func perform(_ request: LeaderElection.Request, timeout: Duration) async -> LeaderElection.Answer
    /// The holder of the group's key, read without campaigning (`opctl ha status`, clients finding the leader).
    func holder(timeout: Duration) async throws -> LeaderElection.Holder?
    func shutdown() async
}

/// etcd's v3 API through its JSON gateway (etcd 3.4: POST /v3/…, keys and values base64, 64-bit
/// integers as strings), over async-http-client. The group's key is `/opqueue/<group>/leader`; its value
/// the leader's advertised endpoint; its create_revision the leader's epoch (revisions only grow, so a
/// later leader always has a higher epoch). Several endpoints: a failed request (unreachable, or an
/// error other than "lease not found") moves to the next for the following request.
public final class EtcdGateway: LeaseStore, @unchecked Sendable {
    public let endpoints: [String]
    public let key: String
    private let value: String
    private let client: HTTPClient
    private let lock = NSLock()
    private var current = 0

    /// `endpoints`: "http://host:port" each; `advertise`: what this node writes as the key's value.
    public init(endpoints: [String], group: String, advertise: String) {
        self.endpoints = endpoints
        key = Self.key(group: group)
        value = advertise
        // The process-wide client: nothing to shut down (a client of our own traps if it is dropped
        // without `shutdown()`, e.g. when a test fails early); each request carries its own deadline.
        client = HTTPClient.shared
    }

    public static func key(group: String) -> String { "/opqueue/\(group)/leader" }

    /// Nothing to release (`HTTPClient.shared`); kept for stores that hold connections of their own.
    public func shutdown() async {}

    public func perform(_ request: LeaderElection.Request, timeout: Duration) async -> LeaderElection.Answer {
        do {
            switch request {
            case .grant(let ttl):
                let r = try await call("/v3/lease/grant", ["TTL": ttl], timeout: timeout)
                guard let id = int(r["ID"]) else { return .failed(leaseGone: false) }
                return .granted(lease: id, ttlSeconds: int(r["TTL"]) ?? ttl)
            case .renew(let lease):
                // The gateway streams keepalive answers: one object {"result": {...}} per line.
                let r = try await call("/v3/lease/keepalive", ["ID": String(lease)], timeout: timeout)
                let result = r["result"] as? [String: Any] ?? r
                return .renewed(ttlSeconds: int(result["TTL"]) ?? 0)
            case .revoke(let lease):
                _ = try await call("/v3/lease/revoke", ["ID": String(lease)], timeout: timeout)
                return .revoked
            case .campaign(let lease):
                let k = Self.base64(key)
                let body: [String: Any] = [
                    "compare": [["key": k, "target": "CREATE", "result": "EQUAL", "create_revision": "0"]],
                    "success": [["request_put": ["key": k, "value": Self.base64(value), "lease": String(lease)]]],
                    "failure": [["request_range": ["key": k]]],
                ]
                let r = try await call("/v3/kv/txn", body, timeout: timeout)
                if r["succeeded"] as? Bool == true {
                    let header = r["header"] as? [String: Any]
                    guard let revision = int(header?["revision"]) else { return .failed(leaseGone: false) }
                    return .won(epoch: revision)
                }
                let responses = r["responses"] as? [[String: Any]]
                let range = responses?.first?["response_range"] as? [String: Any]
                guard let kv = (range?["kvs"] as? [[String: Any]])?.first else { return .lost(holder: nil) }
                let holder = Self.holder(kv)
                // Our own key (a campaign whose answer was lost, retried): we hold it.
                if int(kv["lease"]) == lease, let holder { return .won(epoch: holder.epoch) }
                return .lost(holder: holder)
            }
        } catch let error as EtcdError {
            return .failed(leaseGone: error.leaseNotFound)
        } catch {
            return .failed(leaseGone: false)
        }
    }

    public func holder(timeout: Duration) async throws -> LeaderElection.Holder? {
        let r = try await call("/v3/kv/range", ["key": Self.base64(key)], timeout: timeout)
        guard let kv = (r["kvs"] as? [[String: Any]])?.first else { return nil }
        return Self.holder(kv)
    }

    private static func holder(_ kv: [String: Any]) -> LeaderElection.Holder? {
        guard let v = kv["value"] as? String, let data = Data(base64Encoded: v),
              let endpoint = String(data: data, encoding: .utf8), let epoch = int(kv["create_revision"]) else { return nil }
        return LeaderElection.Holder(endpoint: endpoint, epoch: epoch)
    }

    /// One POST; a transport failure moves to the next endpoint for the following request.
    private func call(_ path: String, _ body: [String: Any], timeout: Duration) async throws -> [String: Any] {
        let base = lock.withLock { endpoints[current % endpoints.count] }
        var request = HTTPClientRequest(url: base + path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: try JSONSerialization.data(withJSONObject: body)))
        let bytes: ByteBuffer
        let status: UInt
        do {
            let response = try await client.execute(request, timeout: .nanoseconds(Int64(timeout.components.seconds) * 1_000_000_000
                                                                                    + timeout.components.attoseconds / 1_000_000_000))
            status = response.status.code
            bytes = try await response.body.collect(upTo: 1 << 20)
        } catch {
            lock.withLock { current += 1 }
            throw EtcdError(message: "\(base): \(error)", leaseNotFound: false)
        }
        // A streamed answer (keepalive) may hold several lines: the first object is ours.
        let text = String(buffer: bytes)
        let first = text.split(separator: "\n", omittingEmptySubsequences: true).first.map(String.init) ?? ""
        guard let object = try? JSONSerialization.jsonObject(with: Data(first.utf8)) as? [String: Any] else {
            throw EtcdError(message: "\(base)\(path): HTTP \(status), not JSON: \(text.prefix(200))", leaseNotFound: false)
        }
        // Errors come as {"error": "...", "code": N, "message": "..."} (or nested in a stream's "error").
        let errorObject = object["error"]
        if status != 200 || errorObject != nil {
            let message = (object["message"] as? String) ?? ((errorObject as? [String: Any])?["message"] as? String)
                ?? (errorObject as? String) ?? "HTTP \(status)"
            let leaseGone = message.contains("lease not found")
            // Another member may answer what this one cannot (no quorum on its side of a partition).
            if !leaseGone { lock.withLock { current += 1 } }
            throw EtcdError(message: "\(base)\(path): \(message)", leaseNotFound: leaseGone)
        }
        return object
    }

    static func base64(_ s: String) -> String { Data(s.utf8).base64EncodedString() }
}

/// etcd's JSON encodes int64 as strings.
private func int(_ v: Any?) -> Int64? {
    if let s = v as? String { return Int64(s) }
    if let n = v as? NSNumber { return n.int64Value }
    return nil
}

public struct EtcdError: Error, CustomStringConvertible {
    public var message: String
    public var leaseNotFound: Bool
    public var description: String { message }
}
