import Foundation
import Testing
@testable import WireProtocol

/// Proves that the `opqueue` Python package's codec (python/, written from docs/PROTOCOL.md) and this
/// codec agree, both ways, field by field, without sockets (python/examples/interop.py). Fails — never
/// skips — when the venv scripts/setup makes is missing.
@Suite(.serialized) struct PythonInteropTests {
    static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    /// The venv's interpreter (the package installed in it); $OPQ_PYTHON overrides it.
    static let python = ProcessInfo.processInfo.environment["OPQ_PYTHON"].flatMap { $0.isEmpty ? nil : $0 }
        ?? root.appendingPathComponent(".venv-python/bin/python").path
    static let script = root.appendingPathComponent("python/examples/interop.py").path
    static let install = "run scripts/setup: it makes .venv-python with the opqueue package (pip install ./python)"

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
