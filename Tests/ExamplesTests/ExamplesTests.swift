import ClusterTestSupport
import Foundation
import Testing

/// Every example client of examples/ against a real coordinator and the example worker: it exits 0
/// (each checks what its pattern promises and exits 1 otherwise) and prints what its README shows.
@Suite(.serialized, .timeLimit(.minutes(2)))
struct ExamplesTests {
    /// Runs `executable` on a fresh cluster; expects exit status 0 and returns its output.
    func run(_ executable: String, _ arguments: [String] = []) throws -> String {
        let cluster = try ExampleCluster()
        defer { cluster.stop() }
        let run = try cluster.run(executable, arguments)
        #expect(run.status == 0, "\(executable) exited with \(run.status):\n\(run.output)\n\(cluster.logs())")
        return run.output
    }

    @Test func imagePipeline() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("imagepipeline-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: dir) }
        let output = try run("imagepipeline", ["--rows", "16", "--dir", dir.path])
        #expect(output.contains("user scrolled to rows 10..<16"), "\(output)")
        #expect(output.contains("failed to load (no photo at photo://missing-3)"), "\(output)")
        // The summary line names as many thumbnails as it wrote files.
        let files = (try? FileManager.default.contentsOfDirectory(atPath: dir.path)) ?? []
        #expect(output.contains("\(files.count) thumbnails,"), "\(files.count) files; \(output)")
        #expect(files.count >= 11)
        #expect(files.allSatisfy { $0.hasSuffix("-thumbnail.ppm") })
        // A thumbnail is a PPM of Thumbnail's default side (32) scaled from Download's 96×64.
        let first = try Data(contentsOf: dir.appendingPathComponent(files.sorted()[0]))
        #expect(first.starts(with: Data("P6\n32 21\n255\n".utf8)))
        #expect(first.count == "P6\n32 21\n255\n".utf8.count + 32 * 21 * 3)
    }

    @Test func filterChain() throws {
        let output = try run("example-filter-chain", ["photo://7"])
        #expect(output.contains("downloaded photo://7: 96×64"), "\(output)")
        #expect(output.contains("thumbnail: 24×16"), "\(output)")
    }

    @Test func scrollingPriorities() throws {
        let output = try run("example-scrolling-priorities")
        #expect(output.contains("the new screen came first, the rows that scrolled away last"), "\(output)")
    }

    @Test func asyncOperation() throws {
        let output = try run("example-async-operation")
        #expect(output.contains("8 photos: photo 0, photo 1"), "\(output)")
        #expect(output.contains("Finished!"), "\(output)")
        #expect(output.contains("while the request ran on its own queue (4 pages × 100 ms)"), "\(output)")
    }

    @Test func completionBlock() throws {
        let output = try run("example-completion-block")
        #expect(output.contains("completion blocks ran: skipped, "), "\(output)")
        #expect(output.contains("bad count threw count must be at least 1 (was 0)"), "\(output)")
        #expect(output.contains("skipped was cancelled"), "\(output)")
    }

    @Test func cancellation() throws {
        let output = try run("example-cancellation")
        #expect(output.contains("6 jobs cancelled, "), "\(output)")
    }

    @Test func waitUntilFinished() throws {
        let output = try run("example-wait-until-finished")
        #expect(output.contains("addOperations(waitUntilFinished: true) returned: 4 of 4 finished, operationCount = 0"), "\(output)")
        #expect(output.contains("on a thread: waitUntilAllOperationsAreFinished() returned with 3 of 3 finished"), "\(output)")
    }
}
