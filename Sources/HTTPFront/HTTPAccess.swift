import Foundation

/// Who may read the HTTP side (docs/HTTP.md "Access"): a pure value, decided from a request's headers.
///
/// - `Host` must name this server: the bind address, `localhost` when bound to loopback, any IP literal
///   when bound to every interface, or a name given with `--http-allow-host`. A page on another name
///   that DNS points at us (DNS rebinding) is refused, so a browser on the head node cannot be used to
///   read the dashboard from a foreign site.
/// - A WebSocket's `Origin`, when sent (browsers always send it), must be the `Host` it asked: a
///   foreign page may open a WebSocket to any address, and the browser lets it read the answers.
/// - With a token, every request that reads data carries it: `Authorization: Bearer TOKEN`, or for the
///   WebSocket (a browser cannot set its headers) the subprotocol `bearer.BASE64URL(TOKEN)` next to
///   `opqueue-live`, which the server answers (never echoing the token).
struct HTTPAccess: Sendable {
    /// What `--http` bound: an IP literal or a name, lower case, without brackets.
    let bindHost: String
    /// `--http-allow-host` names, lower case.
    let allowedHosts: Set<String>
    let token: String?

    init(bindHost: String, allowedHosts: [String] = [], token: String?) {
        self.bindHost = Self.normalized(bindHost)
        self.allowedHosts = Set(allowedHosts.map(Self.normalized))
        self.token = token
    }

    /// The subprotocol the page asks for (and the one answered).
    static let liveProtocol = "opqueue-live"
    static let bearerProtocolPrefix = "bearer."

    enum Refusal: Equatable {
        /// 421: the Host names someone else.
        case foreignHost(String)
        /// 403: a WebSocket opened by a page of another origin.
        case foreignOrigin(String)
        /// 401: no token, or a wrong one.
        case token(given: Bool)
    }

    // MARK: Host

    /// Whether a request's Host header names this server.
    func hostAllowed(_ header: String?) -> Bool {
        guard let header, let host = Self.hostPart(header) else { return false }
        if host == bindHost || allowedHosts.contains(host) { return true }
        let wildcard = bindHost == "0.0.0.0" || bindHost == "::"
        if Self.isIPLiteral(host) { return wildcard }
        // A name nobody can point elsewhere: this machine's own loopback name.
        return host == "localhost" && (wildcard || Self.isLoopback(bindHost))
    }

    /// "name:port", "[v6]:port", "v4" → the host, lower case, without brackets or a trailing dot.
    static func hostPart(_ header: String) -> String? {
        let t = header.trimmingCharacters(in: .whitespaces)
        guard !t.isEmpty else { return nil }
        if t.hasPrefix("[") {
            guard let close = t.firstIndex(of: "]") else { return nil }
            return normalized(String(t[t.index(after: t.startIndex)..<close]))
        }
        let host = t.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? t
        return host.isEmpty ? nil : normalized(host)
    }

    static func normalized(_ host: String) -> String {
        var h = host.lowercased()
        if h.hasPrefix("["), h.hasSuffix("]") { h = String(h.dropFirst().dropLast()) }
        while h.hasSuffix(".") { h.removeLast() }
        return h
    }

    static func isIPLiteral(_ host: String) -> Bool {
        if host.contains(":") { return host.allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." } }
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return parts.count == 4 && parts.allSatisfy { UInt8($0) != nil }
    }

    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || (isIPLiteral(host) && host.hasPrefix("127."))
    }

    // MARK: Origin

    /// A WebSocket's Origin ("http://host:port") must be the Host it was sent to; none (not a browser) passes.
    static func originMatches(_ origin: String?, host: String?) -> Bool {
        guard let origin else { return true }
        guard let host, let sep = origin.range(of: "://") else { return false }   // "null": a sandboxed or file page
        let authority = origin[sep.upperBound...].prefix { $0 != "/" }
        return authority.lowercased() == host.trimmingCharacters(in: .whitespaces).lowercased()
    }

    // MARK: token

    /// The token a request carries: `Authorization: Bearer`, or (WebSocket) the `bearer.` subprotocol.
    static func givenToken(authorization: String?, protocols: String?) -> String? {
        if let a = authorization, a.hasPrefix("Bearer ") { return String(a.dropFirst(7)) }
        for p in offered(protocols) where p.hasPrefix(bearerProtocolPrefix) {
            return base64URLDecoded(String(p.dropFirst(bearerProtocolPrefix.count)))
        }
        return nil
    }

    static func offered(_ protocols: String?) -> [String] {
        (protocols ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
    }

    static func base64URLDecoded(_ s: String) -> String? {
        var b = s.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while b.count % 4 != 0 { b += "=" }
        return Data(base64Encoded: b).flatMap { String(data: $0, encoding: .utf8) }
    }

    /// Nil when the token is not required or is right.
    func tokenRefusal(authorization: String?, protocols: String?) -> Refusal? {
        guard let token else { return nil }
        let given = Self.givenToken(authorization: authorization, protocols: protocols)
        if let given, Self.same(given, token) { return nil }
        return .token(given: given != nil)
    }

    /// Compares without stopping at the first difference (no timing hint about the token).
    static func same(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var diff = x.count ^ y.count
        for i in 0..<min(x.count, y.count) { diff |= Int(x[i] ^ y[i]) }
        return diff == 0
    }

    // MARK: the decision

    /// What refuses a request, checked in this order: Host, then (WebSocket) Origin, then the token.
    /// `needsToken`: false for the page's own files and /healthz, which hold no data.
    func refusal(host: String?, origin: String?, authorization: String?, protocols: String?,
                 webSocket: Bool, needsToken: Bool) -> Refusal? {
        guard hostAllowed(host) else { return .foreignHost(host ?? "") }
        if webSocket, !Self.originMatches(origin, host: host) { return .foreignOrigin(origin ?? "") }
        return needsToken ? tokenRefusal(authorization: authorization, protocols: protocols) : nil
    }
}
