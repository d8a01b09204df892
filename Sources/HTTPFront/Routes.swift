import FlyingFox
import Foundation
import OpClient
import WireProtocol

/// Every GET the HTTP side answers (docs/HTTP.md): the page, its JSON, /metrics. Read-only: anything
/// but GET is refused.
struct Routes: HTTPHandler {
    let reader: CoordinatorReader
    let metrics: MetricsExport
    /// Host, Origin and token checks, before any route (the WebSocket included).
    let access: HTTPAccess

    func handleRequest(_ request: HTTPRequest) async throws -> HTTPResponse {
        let path = request.path
        let webSocket = path == "/api/live"
        // Every route, and first: a Host that is not us is a page of another site (DNS rebinding).
        if let refusal = access.refusal(host: request.headers[.host], origin: request.headers[HTTPHeader("Origin")],
                                        authorization: request.headers[.authorization],
                                        protocols: request.headers[Self.protocolHeader],
                                        webSocket: webSocket, needsToken: !Self.holdsNoData(path)) {
            return Self.error(refusal)
        }
        guard request.method == .GET || request.method == .HEAD else {
            return Self.error(.methodNotAllowed, "the HTTP side is read-only: use opctl to change state", code: "METHOD")
        }
        if webSocket { return try await live(request) }
        let q = request.query
        do {
            switch path {
            case "/metrics":
                return HTTPResponse(statusCode: .ok, headers: [.contentType: "text/plain; version=0.0.4; charset=utf-8"],
                                    body: Data(metrics.render().utf8))
            case "/api/summary": return Self.json(try await summary())
            case "/api/ops": return Self.json(try await ops(q))
            case "/api/op":
                guard let id = q["id"], !id.isEmpty else { return Self.error(.badRequest, "give ?id=RUN/OP", code: "INVALID_ARGUMENT") }
                return Self.json(try await op(id))
            case "/api/story":
                guard let id = q["id"], !id.isEmpty else { return Self.error(.badRequest, "give ?id=RUN/OP", code: "INVALID_ARGUMENT") }
                return Self.json(JSONText.of(try await story(id)))
            case "/api/logs":
                guard let id = q["id"], !id.isEmpty else { return Self.error(.badRequest, "give ?id=RUN/OP", code: "INVALID_ARGUMENT") }
                guard let attempt = UInt32(q["attempt"] ?? "0") else { return Self.error(.badRequest, "attempt must be a number", code: "INVALID_ARGUMENT") }
                return Self.json(JSONText.of(try await logs(id, attempt: attempt)))
            case "/healthz": return HTTPResponse(statusCode: .ok, body: Data("ok\n".utf8))
            default:
                if let page = Pages.file(path) {
                    return HTTPResponse(statusCode: .ok, headers: [.contentType: page.contentType, .cacheControl: "no-cache"],
                                        body: Data(page.body.utf8))
                }
                return Self.error(.notFound, "no such page: \(path)", code: "NOT_FOUND")
            }
        } catch let e as ClientError {
            return Self.error(e)
        } catch let e as BadQuery {
            return Self.error(.badRequest, e.text, code: "INVALID_ARGUMENT")
        }
    }

    static let protocolHeader = HTTPHeader("Sec-WebSocket-Protocol")

    /// The page's own files and /healthz: a browser must load the page before it can ask for the token.
    static func holdsNoData(_ path: String) -> Bool { path == "/healthz" || Pages.file(path) != nil }

    /// `/api/live`: the WebSocket handshake (access already checked), answering the page's subprotocol.
    func live(_ request: HTTPRequest) async throws -> HTTPResponse {
        var response = try await WebSocketHTTPHandler.webSocket(LiveFeed(routes: self)).handleRequest(request)
        if response.statusCode == .switchingProtocols,
           HTTPAccess.offered(request.headers[Self.protocolHeader]).contains(HTTPAccess.liveProtocol) {
            // A browser that offered subprotocols fails the connection unless one is chosen; never the token.
            response.headers[Self.protocolHeader] = HTTPAccess.liveProtocol
        }
        return response
    }

    static func error(_ refusal: HTTPAccess.Refusal) -> HTTPResponse {
        switch refusal {
        case .foreignHost(let host):
            error(.misdirectedRequest, "Host '\(host.prefix(100))' is not this server: open it by its address, or start opcoord with --http-allow-host NAME",
                  code: "MISDIRECTED")
        case .foreignOrigin(let origin):
            error(.forbidden, "a WebSocket from another origin ('\(origin.prefix(100))') is refused", code: "FORBIDDEN")
        case .token(let given):
            error(.unauthorized, given ? "wrong token" : "this dashboard needs a token: send Authorization: Bearer TOKEN",
                  code: "UNAUTHORIZED")
        }
    }

    // MARK: answers

    func summary() async throws -> String {
        var s = WireStatus()
        s.ops = false
        var r = WireRuns()
        r.limit = 100
        async let status = reader.ask(.status(s))
        let runs = try await reader.ask(.runs(r))
        let workers = try await reader.ask(.workers)
        guard case .statusReply(let st) = try await status, case .runsReply(let rr) = runs,
              case .workersReply(let wr) = workers else { throw ClientError.malformedReply(nil, "unexpected reply") }
        return JSONText.object([("status", JSONText.of(st)), ("runs", JSONText.of(rr)), ("workers", JSONText.of(wr))])
    }

    func ops(_ q: [HTTPRequest.QueryItem]) async throws -> String {
        var s = WireStatus()
        s.ops = true
        s.run = q["run"] ?? ""
        s.queue = q["queue"] ?? ""
        s.worker = q["worker"] ?? ""
        s.after = q["after"] ?? ""
        s.withSpec = q["spec"] == "1" || q["spec"] == "true"
        if let l = q["limit"] {
            guard let n = UInt32(l), n >= 1 else { throw BadQuery(text: "limit must be a positive number") }
            s.limit = min(n, UInt32(WireLimits.maxBatchRecords))
        }
        if let states = q["state"], !states.isEmpty {
            s.states = try states.split(separator: ",").map { name in
                guard let st = Self.states[String(name)] else {
                    throw BadQuery(text: "unknown state '\(name)': use pending, ready, dispatched, executing, finished")
                }
                return st
            }
        }
        guard case .statusReply(let r) = try await reader.ask(.status(s)) else { throw ClientError.malformedReply(.status, "unexpected reply") }
        return JSONText.of(r)
    }

    func op(_ id: String) async throws -> String {
        var s = WireStatus()
        s.opIds = [id]
        s.withSpec = true
        s.withResults = true
        var w = WireWhy()
        w.opID = id
        guard case .statusReply(let st) = try await reader.ask(.status(s)) else { throw ClientError.malformedReply(.status, "unexpected reply") }
        if st.ops.isEmpty { throw ClientError.server(.notFound, "no operation \(id)") }
        guard case .whyReply(let why) = try await reader.ask(.why(w)) else { throw ClientError.malformedReply(.why, "unexpected reply") }
        let story = try await story(id), logs = try await logs(id, attempt: 0)
        return JSONText.object([("status", JSONText.of(st)), ("why", JSONText.of(why)),
                                ("story", JSONText.of(story)), ("logs", JSONText.of(logs))])
    }

    func story(_ id: String) async throws -> WireStoryReply {
        var m = WireStory()
        m.opID = id
        guard case .storyReply(let r) = try await reader.ask(.story(m)) else { throw ClientError.malformedReply(.story, "unexpected reply") }
        return r
    }

    func logs(_ id: String, attempt: UInt32) async throws -> WireLogsReply {
        var m = WireLogs()
        m.opID = id
        m.attempt = attempt
        guard case .logsReply(let r) = try await reader.ask(.logs(m)) else { throw ClientError.malformedReply(.logs, "unexpected reply") }
        return r
    }

    static let states: [String: WireOpState] = [
        "pending": .pending, "ready": .ready, "dispatched": .dispatched, "executing": .executing, "finished": .finished,
    ]

    // MARK: responses

    static func json(_ body: String) -> HTTPResponse {
        HTTPResponse(statusCode: .ok, headers: [.contentType: "application/json", .cacheControl: "no-cache"], body: Data(body.utf8))
    }

    static func error(_ status: HTTPStatusCode, _ text: String, code: String) -> HTTPResponse {
        HTTPResponse(statusCode: status, headers: [.contentType: "application/json"],
                     body: Data(JSONText.object([("error", JSONText.string(text)), ("code", JSONText.string(code))]).utf8))
    }

    static func error(_ e: ClientError) -> HTTPResponse {
        switch e {
        case .server(.notFound, let text): error(.notFound, text, code: "NOT_FOUND")
        case .server(.invalidArgument, let text), .server(.malformed, let text): error(.badRequest, text, code: "INVALID_ARGUMENT")
        case .server(.unauthorized, let text): error(.forbidden, text, code: "UNAUTHORIZED")
        case .server(.busy, let text): error(.serviceUnavailable, text, code: "BUSY")
        case .server(.notLeader, let text): error(.serviceUnavailable, text, code: "NOT_LEADER")   // a standby (issue 29)
        case .invalidRequest(_, let text): error(.badRequest, text, code: "INVALID_ARGUMENT")
        default: error(.serviceUnavailable, "the coordinator did not answer: \(e)", code: "UNAVAILABLE")
        }
    }
}

struct BadQuery: Error { var text: String }

extension [HTTPRequest.QueryItem] {
    subscript(_ name: String) -> String? { first { $0.name == name }?.value }
}
