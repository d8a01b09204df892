/// Whether an endpoint is reachable from this machine only: `tcp://127.x.x.x`, `tcp://[::1]`,
/// `tcp://localhost`, `ipc://`, `inproc://`. Everything else — `tcp://*`, `tcp://0.0.0.0`, a host name,
/// an interface name — may be reached from the network, which is where keys are required (PROTOCOL.md §12).
public enum EndpointScope {
    public static func isLoopback(_ given: String) -> Bool {
        // Several coordinators (`tcp://a:7600,tcp://b:7600`, issue 29): loopback only if every one is.
        if given.contains(",") { return given.split(separator: ",").allSatisfy { isLoopback(String($0)) } }
        let endpoint = given.lowercased()
        if endpoint.hasPrefix("ipc://") || endpoint.hasPrefix("inproc://") { return true }
        guard endpoint.hasPrefix("tcp://") else { return false }
        var host = Substring(endpoint.dropFirst(6))
        // A source address ("tcp://src;dest") is not the peer; look at the destination.
        if let semi = host.lastIndex(of: ";") { host = host[host.index(after: semi)...] }
        if host.hasPrefix("[") {
            guard let close = host.firstIndex(of: "]") else { return false }
            return host[host.index(after: host.startIndex)..<close] == "::1"
        }
        if let colon = host.lastIndex(of: ":") { host = host[..<colon] }
        if host == "localhost" { return true }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts[0] == "127" && parts.allSatisfy { UInt8($0) != nil }
    }

    /// What is wrong with an endpoint to bind, before libzmq sees it (it wraps a port above 65535 and
    /// reports an unknown transport as "protocol not supported"); nil when it is one we can bind.
    public static func bindProblem(_ endpoint: String) -> String? { problem(endpoint, connecting: false) }

    /// The same for an endpoint to connect to (`opworker --connect`, `opctl --coordinator`, $OPCOORD):
    /// libzmq refuses one without a port only when connecting (EINVAL, "Invalid argument") and retries
    /// a wrapped port for ever; a port of * means nothing here.
    public static func connectProblem(_ endpoint: String) -> String? { problem(endpoint, connecting: true) }

    private static func problem(_ endpoint: String, connecting: Bool) -> String? {
        let example = connecting ? "tcp://HEAD:7600" : "tcp://127.0.0.1:7600"
        let anyPort = connecting ? "" : ", or * for a free one"
        let parts = endpoint.split(separator: "://", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2 else {
            return "'\(endpoint)' is not an endpoint: give tcp://HOST:PORT (e.g. \(example)) or ipc://PATH"
        }
        let transport = parts[0].lowercased(), rest = parts[1]
        switch transport {
        case "tcp":
            guard let colon = rest.lastIndex(of: ":"), colon != rest.startIndex else {
                return "'\(endpoint)' has no port: give tcp://HOST:PORT (e.g. \(example)\(connecting ? "" : "; a port of * picks a free one"))"
            }
            let port = rest[rest.index(after: colon)...]
            if port == "*" && !connecting { return nil }
            guard !port.isEmpty, port.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else {
                return "'\(port)' in \(endpoint) is not a port: give a number from 1 to 65535\(anyPort)"
            }
            guard let n = Int(port), (1...65535).contains(n) else {
                return "port \(port) in \(endpoint) is out of range: give a number from 1 to 65535\(anyPort)"
            }
            return nil
        case "ipc", "inproc":
            return rest.isEmpty ? "'\(endpoint)' has no path: give \(transport)://NAME" : nil
        default:
            let does = connecting ? "connects to" : "binds"
            return "unknown transport '\(transport)' in \(endpoint): \(connecting ? "opqueue" : "the coordinator") \(does) tcp://HOST:PORT or ipc://PATH"
        }
    }
}
