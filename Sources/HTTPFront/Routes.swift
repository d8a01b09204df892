import FlyingFox
import Foundation
import OpClient
import WireProtocol

/// Every GET the HTTP side answers (docs/HTTP.md): the page, its JSON, /metrics. Read-only: anything
/// but GET is refused.
struct Routes: HTTPHandler {
    let reader: CoordinatorReader
    let metrics: MetricsExport
    let token: String?

    func handleRequest(_ request: HTTPRequest) async throws -> HTTPResponse {
        guard request.method == .GET || request.method == .HEAD else {
            return Self.error(.methodNotAllowed, "the HTTP side is read-only: use opctl to change state", code: "METHOD")
        }
        if let problem = authorization(request) { return problem }
        let q = request.query
        do {
            switch request.path {
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
                if let page = Pages.file(request.path) {
                    return HTTPResponse(statusCode: .ok, headers: [.contentType: page.contentType, .cacheControl: "no-cache"],
                                        body: Data(page.body.utf8))
                }
                return Self.error(.notFound, "no such page: \(request.path)", code: "NOT_FOUND")
            }
        } catch let e as ClientError {
            return Self.error(e)
        } catch let e as BadQuery {
            return Self.error(.badRequest, e.text, code: "INVALID_ARGUMENT")
        }
    }

    /// Off loopback a token is set and every request must carry it (the WebSocket may pass it as
    /// `?token=`, since browsers cannot set headers on one).
    func authorization(_ request: HTTPRequest) -> HTTPResponse? {
        guard let token else { return nil }
        let given = request.headers[.authorization].flatMap { h in h.hasPrefix("Bearer ") ? String(h.dropFirst(7)) : nil }
            ?? request.query["token"]
        if let given, Self.same(given, token) { return nil }
        return Self.error(.unauthorized, given == nil ? "this dashboard needs a token: send Authorization: Bearer TOKEN"
                                                      : "wrong token", code: "UNAUTHORIZED")
    }

    /// Compares without stopping at the first difference (no timing hint about the token).
    static func same(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var diff = x.count ^ y.count
        for i in 0..<min(x.count, y.count) { diff |= Int(x[i] ^ y[i]) }
        return diff == 0
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
        case .invalidRequest(_, let text): error(.badRequest, text, code: "INVALID_ARGUMENT")
        default: error(.serviceUnavailable, "the coordinator did not answer: \(e)", code: "UNAVAILABLE")
        }
    }
}

struct BadQuery: Error { var text: String }

extension [HTTPRequest.QueryItem] {
    subscript(_ name: String) -> String? { first { $0.name == name }?.value }
}
