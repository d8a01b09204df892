import Foundation
import Testing

/// scripts/own-warnings, which makes scripts/test (and so CI) fail on a compiler warning in the project's
/// own sources: what it lists from a `swift build` log and what it leaves to others.
@Suite struct OwnWarningsScriptTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    func ownWarnings(in log: String) throws -> CommandLineTests.Run {
        let file = NSTemporaryDirectory() + "own-warnings-\(UUID().uuidString).log"
        try log.write(toFile: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(atPath: file) }
        return try CommandLineTests.run("/bin/bash", [Self.root + "/scripts/own-warnings", file], timeout: 30)
    }

    @Test func listsOwnWarningsOnceEachByRelativePath() throws {
        let r = Self.root
        let run = try ownWarnings(in: """
            [12/80] Compiling ZeroMQ Curve.swift
            \(r)/Sources/ZeroMQ/Curve.swift:36:51: warning: 'init(cString:)' is deprecated
               |        `- warning: 'init(cString:)' is deprecated
            \(r)/Tests/SchedulerCoreTests/RunTests.swift:76:11: warning: result of call to 'drain' is unused
            \(r)/examples/Typed/Worker/main.swift:3:5: warning: variable 'x' was never mutated
            \(r)/Sources/ZeroMQ/Curve.swift:36:51: warning: 'init(cString:)' is deprecated
            """)
        #expect(run.status == 1)
        #expect(run.stdout == """
            Sources/ZeroMQ/Curve.swift:36:51: warning: 'init(cString:)' is deprecated
            Tests/SchedulerCoreTests/RunTests.swift:76:11: warning: result of call to 'drain' is unused
            examples/Typed/Worker/main.swift:3:5: warning: variable 'x' was never mutated

            """)
    }

    @Test func leavesDependenciesAndSwiftPMToOthers() throws {
        let r = Self.root
        let run = try ownWarnings(in: """
            warning: prohibited flag(s): -isystem, /usr/include/mit-krb5
            \(r)/.build/checkouts/swift-protobuf/Sources/SwiftProtobuf/Message.swift:10:1: warning: deprecated
            /elsewhere/Sources/Other/File.swift:1:1: warning: another checkout's
            \(r)/Sources/ZeroMQ/Curve.swift:36:51: error: a compile error is not a warning
            Build complete! (12.3s)
            """)
        #expect(run.status == 0, "\(run.stdout)")
        #expect(run.stdout.isEmpty)
    }
}
