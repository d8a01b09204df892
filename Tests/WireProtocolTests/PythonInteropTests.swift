import Foundation
import Testing
@testable import WireProtocol

/// Proves that examples/python (written from docs/PROTOCOL.md) and this codec agree,
/// both ways, field by field, without sockets. Fails — never skips — when Debian's
/// python3 or its modules are missing.
@Suite(.serialized) struct PythonInteropTests {
    /// Debian's interpreter (the one with python3-zmq/python3-protobuf); OPQUEUE_PYTHON overrides it.
    static let python = ProcessInfo.processInfo.environment["OPQUEUE_PYTHON"] ?? "/usr/bin/python3"
    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("examples/python/interop.py").path
    static let install = "install Debian's python3 with python3-zmq and python3-protobuf (apt-get install python3 python3-zmq python3-protobuf)"

    /// Runs the script with `mode`, feeding `input`; returns (status, stdout, stderr). Bounded to 30 s.
    private func run(_ mode: String, input: String = "") throws -> (Int32, String, String) {
        guard FileManager.default.isExecutableFile(atPath: Self.python) else {
            throw InteropFailure("\(Self.python) not found: \(Self.install)")  // a thrown error fails the test
        }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: Self.python)
        p.arguments = [Self.script, mode]
        let inPipe = Pipe(), outPipe = Pipe(), errPipe = Pipe()
        p.standardInput = inPipe
        p.standardOutput = outPipe
        p.standardError = errPipe
        let done = DispatchSemaphore(value: 0)
        p.terminationHandler = { _ in done.signal() }
        try p.run()
        inPipe.fileHandleForWriting.write(Data(input.utf8))
        try inPipe.fileHandleForWriting.close()
        // Read both pipes to the end concurrently so neither can fill up and block the child.
        nonisolated(unsafe) var errData = Data()
        let errRead = DispatchSemaphore(value: 0)
        DispatchQueue.global().async { errData = errPipe.fileHandleForReading.readDataToEndOfFile(); errRead.signal() }
        let outData = outPipe.fileHandleForReading.readDataToEndOfFile()
        if done.wait(timeout: .now() + 30) == .timedOut {
            p.terminate()
            Issue.record("python timed out")
        }
        _ = errRead.wait(timeout: .now() + 5)
        return (p.terminationStatus, String(decoding: outData, as: UTF8.self), String(decoding: errData, as: UTF8.self))
    }

    private func fixture(_ command: Command) -> Envelope? {
        Fixtures.all.first { $0.message.command == command }
    }

    @Test func testSwiftDecodesPythonEncodedMessages() throws {
        let (status, out, err) = try run("emit")
        #expect(status == 0, "python emit failed (\(err)). If a module is missing: \(Self.install)")
        let lines = out.split(separator: "\n")
        #expect(lines.count >= 14)
        for line in lines {
            let f = line.split(separator: " ").map(String.init)
            guard f.count == 3, let command = Command.allCases.first(where: { $0.description == f[0] }) else {
                Issue.record("bad line \(line)"); continue
            }
            let frames = [unhex(f[1]), f[2] == "-" ? [] : unhex(f[2])]
            guard let want = fixture(command) else { Issue.record("no Swift fixture for \(f[0])"); continue }
            switch WireCodec.decode(frames) {
            case .success(let got):
                #expect(got == want, "\(f[0]) differs field by field")
                #expect(WireCodec.encode(want.message, requestID: want.requestID) == frames, "\(f[0]) bytes differ")
            case .failure(let e):
                Issue.record("\(f[0]) from Python: \(e)")
            }
        }
    }

    @Test func testPythonDecodesSwiftEncodedMessages() throws {
        let names: [Command] = [.hello, .welcome, .reject, .credit, .dispatch, .started, .progress, .finished,
                                .cancel, .heartbeat, .disconnect, .submit, .wait, .error]
        var input = ""
        for c in names {
            let env = try #require(fixture(c))
            let f = WireCodec.encode(env.message, requestID: env.requestID)
            input += "\(c.description) \(hex(f[0])) \(f[1].isEmpty ? "-" : hex(f[1]))\n"
        }
        let (status, out, err) = try run("check", input: input)
        #expect(status == 0, "python check failed:\n\(out)\n\(err)\nIf a module is missing: \(Self.install)")
        #expect(out.split(separator: "\n").filter { $0.hasPrefix("OK ") }.count == names.count, "\(out)")
    }
}

struct InteropFailure: Error, CustomStringConvertible {
    let description: String
    init(_ d: String) { description = d }
}
