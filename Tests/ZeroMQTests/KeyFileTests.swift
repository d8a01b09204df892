import Foundation
import Testing
import ZeroMQ

/// Key files refuse what ssh refuses, each with what to do (docs/DEPLOY.md "Keys and roles").
struct KeyFileTests {
    func tempPath(_ name: String) -> String {
        let dir = NSTemporaryDirectory() + "opq-keys-\(UUID().uuidString.prefix(8))"
        try? FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        return dir + "/" + name
    }

    @Test func newKeysAreWrittenPrivatelyAndReadBack() throws {
        guard libzmqHas("curve") else { return }
        let path = tempPath("alice.key")
        let pair = try KeyFile.create(at: path)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        let pub = try String(contentsOfFile: path + ".pub", encoding: .utf8)
        #expect(pub.count == 41 && pub.hasSuffix("\n"))
        #expect(try KeyFile.loadSecret(path) == pair)
        #expect(try KeyFile.loadPublic(path + ".pub").raw == pair.publicKey)
        #expect(try KeyFile.loadPublic(pub).raw == pair.publicKey)
        #expect(throws: KeyFileError.exists(path)) { try KeyFile.create(at: path) }
        // Z85 has '/' and '.': a key that looks like a path is still a key (a file that exists wins).
        let slashy = "KS/2HQ)6u@4VF?{fKS%eOouvwH+3rr5^QY0?m^X."
        #expect(try KeyFile.loadPublic(slashy).z85 == slashy)
    }

    @Test func looseMissingOrMalformedFilesAreRefusedWithAdvice() throws {
        guard libzmqHas("curve") else { return }
        let path = tempPath("k.key")
        try KeyFile.create(at: path)
        chmod(path, 0o644)
        #expect(throws: KeyFileError.loosePermissions(path, mode: 0o644)) { try KeyFile.loadSecret(path) }
        #expect(KeyFileError.loosePermissions(path, mode: 0o644).description.contains("chmod 600"))
        #expect(KeyFileError.missing("/nope.key").description.contains("opctl keys new /nope.key"))
        #expect(throws: KeyFileError.missing("/nonexistent/x.key")) { try KeyFile.loadSecret("/nonexistent/x.key") }
        let bad = tempPath("bad.key")
        try "# just a comment\nnot a key\n".write(toFile: bad, atomically: false, encoding: .utf8)
        chmod(bad, 0o600)
        #expect(throws: KeyFileError.self) { try KeyFile.loadSecret(bad) }
        #expect(throws: KeyFileError.self) { try KeyFile.loadPublic("tooshort") }
    }

    /// Issue 23 (9): a .pub given as the secret key, and a token file without a token, are named for
    /// what they are, not as a permission problem or a "CURVE key".
    @Test func aPublicKeyOrAnEmptyTokenIsCalledWhatItIs() throws {
        guard libzmqHas("curve") else { return }
        let path = tempPath("w.key")
        try KeyFile.create(at: path)
        #expect(throws: KeyFileError.publicKeyGiven(path + ".pub")) { try KeyFile.loadSecret(path + ".pub") }
        let said = KeyFileError.publicKeyGiven(path + ".pub").description
        #expect(said.contains("is a public key") && said.contains("'\(path)'"), "\(said)")

        let token = tempPath("token")
        #expect(FileManager.default.createFile(atPath: token, contents: nil, attributes: [.posixPermissions: 0o600]))
        #expect(throws: KeyFileError.noToken(token, length: 0)) { try KeyFile.loadToken(token) }
        let empty = KeyFileError.noToken(token, length: 0).description
        #expect(empty.contains("token file") && !empty.contains("CURVE"), "\(empty)")
        try "short\n".write(toFile: token, atomically: false, encoding: .utf8)
        #expect(throws: KeyFileError.noToken(token, length: 5)) { try KeyFile.loadToken(token) }
        try "0123456789abcdef0123\n".write(toFile: token, atomically: false, encoding: .utf8)
        #expect(try KeyFile.loadToken(token) == "0123456789abcdef0123")
        chmod(token, 0o640)
        #expect(throws: KeyFileError.loosePermissions(token, mode: 0o640, kind: .token)) { try KeyFile.loadToken(token) }
        let loose = KeyFileError.loosePermissions(token, mode: 0o640, kind: .token).description
        #expect(loose.contains("token file") && loose.contains("chmod 600"), "\(loose)")
    }

    /// Issue 23 (8): the allow file may be read by anyone but written by its owner only.
    @Test func anAllowFileOthersMayWriteIsRefusedWithTheFix() throws {
        let path = tempPath("allow.txt")
        try "# nobody\n".write(toFile: path, atomically: false, encoding: .utf8)
        for mode: mode_t in [0o644, 0o600, 0o444] {
            chmod(path, mode)
            #expect(try KeyFile.contents(of: path, as: .allowFile) == "# nobody\n", "mode \(String(mode, radix: 8))")
        }
        for mode: mode_t in [0o666, 0o664, 0o646, 0o620] {
            chmod(path, mode)
            #expect(throws: KeyFileError.loosePermissions(path, mode: UInt32(mode), kind: .allowFile)) {
                try KeyFile.contents(of: path, as: .allowFile)
            }
        }
        let said = KeyFileError.loosePermissions(path, mode: 0o666, kind: .allowFile).description
        #expect(said.contains("allow file") && said.contains("chmod go-w '\(path)'"), "\(said)")
    }

    /// Issue 23 (9): a bind endpoint libzmq would wrap or misreport is refused with what is wrong.
    @Test func bindEndpointsAreCheckedBeforeLibzmqSeesThem() {
        for e in ["tcp://127.0.0.1:7600", "tcp://0.0.0.0:*", "tcp://[::1]:65535", "tcp://eth0:1", "ipc:///tmp/x", "inproc://a"] {
            #expect(EndpointScope.bindProblem(e) == nil, "\(e)")
        }
        #expect(EndpointScope.bindProblem("tcp://127.0.0.1:99999")?.contains("port 99999 in tcp://127.0.0.1:99999 is out of range") == true)
        #expect(EndpointScope.bindProblem("tcp://127.0.0.1:0")?.contains("out of range") == true)
        #expect(EndpointScope.bindProblem("tcp://127.0.0.1:http")?.contains("'http' in tcp://127.0.0.1:http is not a port") == true)
        #expect(EndpointScope.bindProblem("tcp://127.0.0.1")?.contains("has no port") == true)
        #expect(EndpointScope.bindProblem("garbage://")?.contains("unknown transport 'garbage'") == true)
        #expect(EndpointScope.bindProblem("127.0.0.1:7600")?.contains("is not an endpoint") == true)
    }

    /// The same checks for connecting, where a port of * means nothing.
    @Test func connectEndpointsAreCheckedBeforeLibzmqSeesThem() {
        for e in ["tcp://127.0.0.1:7600", "tcp://head.example:1", "tcp://[::1]:65535", "ipc:///tmp/x", "inproc://a"] {
            #expect(EndpointScope.connectProblem(e) == nil, "\(e)")
        }
        #expect(EndpointScope.connectProblem("tcp://head:*")?.contains("'*' in tcp://head:* is not a port: give a number from 1 to 65535") == true)
        #expect(EndpointScope.connectProblem("tcp://head")?.contains("has no port: give tcp://HOST:PORT (e.g. tcp://HEAD:7600)") == true)
        #expect(EndpointScope.connectProblem("tcp://head:65536")?.contains("out of range") == true)
        #expect(EndpointScope.connectProblem("pgm://x")?.contains("unknown transport 'pgm'") == true)
    }

    @Test func endpointsOnlyThisMachineReachesAreLoopback() {
        for e in ["tcp://127.0.0.1:7600", "tcp://127.1.2.3:*", "tcp://localhost:1", "tcp://[::1]:7600", "ipc:///tmp/x", "inproc://a"] {
            #expect(EndpointScope.isLoopback(e), "\(e)")
        }
        for e in ["tcp://0.0.0.0:7600", "tcp://*:7600", "tcp://198.18.0.1:7600", "tcp://head:7600", "tcp://eth0:1",
                  "tcp://[::]:7600", "tcp://127.0.0.1.evil:1", "udp://127.0.0.1:1"] {
            #expect(!EndpointScope.isLoopback(e), "\(e)")
        }
    }
}
