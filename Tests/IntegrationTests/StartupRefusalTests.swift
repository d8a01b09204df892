import ClusterTestSupport
import Foundation
import Testing
import ZeroMQ

/// Issue 23 (8, 9): opcoord refuses, before it listens, flags and files that cannot be right, and says
/// what is wrong with each (exit status and stderr as a person sees them).
@Suite(.timeLimit(.minutes(2)))
struct StartupRefusalTests {
    let opcoord = Binaries.path("opcoord")

    func dir() throws -> String {
        let d = NSTemporaryDirectory() + "opq-refuse-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: d, withIntermediateDirectories: true)
        return d
    }

    @Test func aPortOutOfRangeIsRefusedNotWrapped() throws {
        let r = try CommandLineTests.run(opcoord, ["--bind", "tcp://127.0.0.1:99999", "--ephemeral", "--http", "off"], timeout: 30)
        #expect(r.status == 64, "\(r.status) \(r.stderr)")
        #expect(r.stderr.contains("port 99999 in tcp://127.0.0.1:99999 is out of range"), "\(r.stderr)")
    }

    @Test func anUnknownTransportIsNamedNotTakenForANetworkBind() throws {
        let r = try CommandLineTests.run(opcoord, ["--bind", "garbage://", "--ephemeral", "--http", "off"], timeout: 30)
        #expect(r.status == 64, "\(r.status) \(r.stderr)")
        #expect(r.stderr.contains("unknown transport 'garbage'") && !r.stderr.contains("keys"), "\(r.stderr)")
    }

    @Test func anAllowedHostMustBeAHostName() throws {
        let r = try CommandLineTests.run(opcoord, ["--bind", "tcp://127.0.0.1:*", "--ephemeral", "--http", "127.0.0.1:0",
                                                   "--http-allow-host", "http://head.example.org/"], timeout: 30)
        #expect(r.status == 64, "\(r.status) \(r.stderr)")
        #expect(r.stderr.contains("--http-allow-host 'http://head.example.org/' is not a host name"), "\(r.stderr)")
    }

    @Test func aPublicKeyGivenAsTheSecretKeyIsCalledPublic() throws {
        guard libzmqHas("curve") else { return }
        let d = try dir()
        defer { try? FileManager.default.removeItem(atPath: d) }
        try KeyFile.create(at: d + "/coordinator.key")
        #expect(FileManager.default.createFile(atPath: d + "/allow.txt", contents: nil, attributes: [.posixPermissions: 0o644]))
        let r = try CommandLineTests.run(opcoord, ["--bind", "tcp://127.0.0.1:*", "--ephemeral", "--http", "off",
                                                   "--key", d + "/coordinator.key.pub", "--allow", d + "/allow.txt"], timeout: 30)
        #expect(r.status == 1, "\(r.status) \(r.stderr)")
        #expect(r.stderr.contains("'\(d)/coordinator.key.pub' is a public key: give the secret key") && !r.stderr.contains("permissions"),
                "\(r.stderr)")
    }

    @Test func anEmptyTokenFileIsCalledATokenFile() throws {
        let d = try dir()
        defer { try? FileManager.default.removeItem(atPath: d) }
        #expect(FileManager.default.createFile(atPath: d + "/token", contents: nil, attributes: [.posixPermissions: 0o600]))
        let r = try CommandLineTests.run(opcoord, ["--bind", "tcp://127.0.0.1:*", "--ephemeral", "--http", "127.0.0.1:0",
                                                   "--http-token-file", d + "/token"], timeout: 30)
        #expect(r.status == 1, "\(r.status) \(r.stderr)")
        #expect(r.stderr.contains("token file '\(d)/token' holds no token") && !r.stderr.contains("CURVE"), "\(r.stderr)")
    }

    @Test func anAllowFileOthersMayWriteStopsTheStart() throws {
        guard libzmqHas("curve") else { return }
        let d = try dir()
        defer { try? FileManager.default.removeItem(atPath: d) }
        try KeyFile.create(at: d + "/coordinator.key")
        let alice = try KeyFile.create(at: d + "/alice.key")
        try "\(Z85.encode(alice.publicKey)) alice admin\n".write(toFile: d + "/allow.txt", atomically: false, encoding: .utf8)
        chmod(d + "/allow.txt", 0o666)
        let r = try CommandLineTests.run(opcoord, ["--bind", "tcp://127.0.0.1:*", "--ephemeral", "--http", "off",
                                                   "--key", d + "/coordinator.key", "--allow", d + "/allow.txt"], timeout: 30)
        #expect(r.status == 1, "\(r.status) \(r.stderr)")
        #expect(r.stderr.contains("permissions 666 for allow file '\(d)/allow.txt' are too open")
                && r.stderr.contains("chmod go-w '\(d)/allow.txt'"), "\(r.stderr)")
    }
}
