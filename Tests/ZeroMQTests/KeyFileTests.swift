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
