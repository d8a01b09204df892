/// Whether an endpoint is reachable from this machine only: `tcp://127.x.x.x`, `tcp://[::1]`,
/// `tcp://localhost`, `ipc://`, `inproc://`. Everything else — `tcp://*`, `tcp://0.0.0.0`, a host name,
/// an interface name — may be reached from the network, which is where keys are required (PROTOCOL.md §12).
public enum EndpointScope {
    public static func isLoopback(_ given: String) -> Bool {
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
}
