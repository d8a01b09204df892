import ClusterTestSupport
import Foundation
import Testing

/// Issue 23 (6): the live WebSocket is behind the token like every other route, a page of another
/// origin cannot open it, and a Host that is not this server (DNS rebinding) is refused everywhere.
@Suite(.serialized, .timeLimit(.minutes(3)))
struct HTTPAccessTests {
    struct Answer {
        var status: Int
        var headers: [String: String]
        var body: String
    }

    /// One raw HTTP/1.1 request with exactly these headers (a WebSocket upgrade when `upgrade`), over a
    /// plain socket so nothing adds or fixes a header: the status, the headers and the first bytes after.
    static func request(_ base: String, _ path: String, headers: [String: String], upgrade: Bool = false) throws -> Answer {
        let script = #"""
            import json, socket, sys
            host, port = sys.argv[1].replace("http://", "").rsplit(":", 1)
            path, headers, upgrade = sys.argv[2], json.loads(sys.argv[3]), sys.argv[4] == "1"
            lines = ["GET %s HTTP/1.1" % path]
            if upgrade:
                lines += ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Version: 13",
                          "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ=="]
            else:
                lines += ["Connection: close"]
            lines += ["%s: %s" % kv for kv in headers.items()]
            s = socket.create_connection((host, int(port)), timeout=10)
            s.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = s.recv(4096)
                if not chunk: break
                data += chunk
            head, _, rest = data.partition(b"\r\n\r\n")
            status_line, *header_lines = head.decode("latin-1").split("\r\n")
            got = {k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in header_lines if ":" in h)}
            want = int(got.get("content-length", "0"))
            while len(rest) < want:
                chunk = s.recv(4096)
                if not chunk: break
                rest += chunk
            out = {"status": int(status_line.split()[1]), "headers": got, "body": rest[:300].decode("utf-8", "replace")}
            print(json.dumps(out))
            """#
        let headerJSON = String(data: try JSONSerialization.data(withJSONObject: headers), encoding: .utf8)!
        let r = try CommandLineTests.run("/usr/bin/python3", ["-c", script, base, path, headerJSON, upgrade ? "1" : "0"], timeout: 30)
        guard r.status == 0, let parsed = try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any],
              let status = parsed["status"] as? Int else {
            throw ClusterError("request to \(base)\(path) failed: \(r.stdout) \(r.stderr)")
        }
        return Answer(status: status, headers: parsed["headers"] as? [String: String] ?? [:], body: parsed["body"] as? String ?? "")
    }

    static func bearerProtocol(_ token: String) -> String {
        "bearer." + Data(token.utf8).base64EncodedString()
            .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
    }

    @Test func theLiveFeedNeedsTheTokenItsOwnOriginAndThisHost() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("opq-httpacc-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let token = "s3cret-token-0123456789+/"
        let tokenFile = dir.appendingPathComponent("token").path
        try "\(token)\n".write(toFile: tokenFile, atomically: true, encoding: .utf8)
        chmod(tokenFile, 0o600)
        let c = try LocalCluster(coordinatorArgs: ["--http", "0.0.0.0:0", "--http-token-file", tokenFile,
                                                   "--http-allow-host", "head.example.org"], keys: true)
        defer { c.stop() }
        let base = try c.httpBase().replacingOccurrences(of: "0.0.0.0", with: "127.0.0.1")
        let host = base.replacingOccurrences(of: "http://", with: "")
        let port = host.split(separator: ":").last!

        // The WebSocket without a token: refused, not upgraded (today's main answered 101).
        let bare = try Self.request(base, "/api/live", headers: ["Host": host], upgrade: true)
        #expect(bare.status == 401, "\(bare)")
        // The old ?token= query is no longer a way in (URLs end up in logs and history).
        #expect(try Self.request(base, "/api/live?token=\(token)", headers: ["Host": host], upgrade: true).status == 401)
        let wrong = try Self.request(base, "/api/live", headers: ["Host": host, "Authorization": "Bearer wrong-token-0123456789"], upgrade: true)
        #expect(wrong.status == 401, "\(wrong)")
        // With the token, but opened by a page of another origin: refused.
        let crossOrigin = try Self.request(base, "/api/live", headers: ["Host": host, "Origin": "http://evil.example",
                                                                         "Sec-WebSocket-Protocol": "opqueue-live, \(Self.bearerProtocol(token))"], upgrade: true)
        #expect(crossOrigin.status == 403, "\(crossOrigin)")
        // A Host that is not us (a rebinding name pointed at 127.0.0.1): refused on every route.
        let rebound = "attacker.example:\(port)"
        let foreign = try Self.request(base, "/api/live", headers: ["Host": rebound, "Origin": "http://\(rebound)",
                                                                     "Sec-WebSocket-Protocol": "opqueue-live, \(Self.bearerProtocol(token))"], upgrade: true)
        #expect(foreign.status == 421, "\(foreign)")
        for path in ["/api/summary", "/metrics", "/", "/healthz"] {
            #expect(try Self.request(base, path, headers: ["Host": rebound, "Authorization": "Bearer \(token)"]).status == 421, "\(path)")
        }

        // The page's way: its own origin, the token as a subprotocol; answered with opqueue-live, never the token.
        let page = try Self.request(base, "/api/live", headers: ["Host": host, "Origin": "http://\(host)",
                                                                  "Sec-WebSocket-Protocol": "opqueue-live, \(Self.bearerProtocol(token))"], upgrade: true)
        #expect(page.status == 101, "\(page)")
        #expect(page.headers["sec-websocket-protocol"] == "opqueue-live", "\(page.headers)")
        // A script's way: the Authorization header, no Origin; the allowed name and any address literal are this server.
        for h in [host, "head.example.org:\(port)", "localhost:\(port)"] {
            let script = try Self.request(base, "/api/live", headers: ["Host": h, "Authorization": "Bearer \(token)"], upgrade: true)
            #expect(script.status == 101, "\(h): \(script)")
        }
        // Every other route wants the token too; the page's own files and /healthz hold no data.
        #expect(try Self.request(base, "/api/summary", headers: ["Host": host]).status == 401)
        #expect(try Self.request(base, "/api/summary", headers: ["Host": host, "Authorization": "Bearer \(token)"]).status == 200)
        #expect(try Self.request(base, "/metrics", headers: ["Host": host]).status == 401)
        #expect(try Self.request(base, "/", headers: ["Host": host]).status == 200)
        #expect(try Self.request(base, "/healthz", headers: ["Host": host]).status == 200)
    }

    /// On loopback without a token the side is open to this machine, but still not to a page of another
    /// site: a rebinding Host and a cross-origin WebSocket are refused.
    @Test func onLoopbackAForeignSiteStillCannotRead() throws {
        let c = try LocalCluster(coordinatorArgs: ["--http", "127.0.0.1:0"])
        defer { c.stop() }
        let base = try c.httpBase()
        let host = base.replacingOccurrences(of: "http://", with: "")
        let port = host.split(separator: ":").last!
        #expect(try Self.request(base, "/api/summary", headers: ["Host": host]).status == 200)
        #expect(try Self.request(base, "/api/summary", headers: ["Host": "localhost:\(port)"]).status == 200)
        #expect(try Self.request(base, "/api/summary", headers: ["Host": "rebind.attacker.example:\(port)"]).status == 421)
        #expect(try Self.request(base, "/api/summary", headers: [:]).status == 421)
        let cross = try Self.request(base, "/api/live", headers: ["Host": host, "Origin": "http://attacker.example"], upgrade: true)
        #expect(cross.status == 403, "\(cross)")
        let own = try Self.request(base, "/api/live", headers: ["Host": host, "Origin": "http://\(host)", "Sec-WebSocket-Protocol": "opqueue-live"],
                                   upgrade: true)
        #expect(own.status == 101 && own.headers["sec-websocket-protocol"] == "opqueue-live", "\(own)")
    }
}
