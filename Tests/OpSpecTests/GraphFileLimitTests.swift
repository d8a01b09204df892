import Foundation
@testable import OpSpec
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// A graph file cannot make the reader expand aliases or read without bound (docs/GRAPHS.md, "Limits").
@Suite struct GraphFileLimitTests {
    /// Nine levels of nine aliases: 9⁹ ≈ 387 million "lol"s in a payload, from about 500 bytes.
    static let billionLaughs = """
        operations:
          - id: lol
            kind: echo
            payload:
              a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
              b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
              c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
              d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
              e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
              f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
              g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
              h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
              i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
        """

    /// Rejected at once (before this fix: tens of seconds and gigabytes), naming the limit and the alias.
    @Test func billionLaughsIsRefusedAtOnceNamingTheLimit() throws {
        var found: [GraphProblem] = []
        let elapsed = ContinuousClock().measure { found = problems(Self.billionLaughs) }
        #expect(elapsed < .seconds(1), "took \(elapsed)")
        let problem = try #require(found.first)
        #expect(found.count == 1)
        #expect(problem.message.hasPrefix("too many aliases: with *f here, aliases add more than 1,000,000 nodes (the limit;"), "\(problem)")
        #expect(problem.location == "file" && problem.line == 11)
    }

    /// The same bomb as a mapping key would go off inside the YAML composer (it hashes keys), before
    /// the reader sees any node: the check runs before composing.
    @Test func anAliasBombAsAKeyIsRefusedBeforeComposing() throws {
        let yaml = Self.billionLaughs.replacingOccurrences(of: "  i: &i", with: "  ? &i") + "\n      : boom\n"
        var found: [GraphProblem] = []
        let elapsed = ContinuousClock().measure { found = problems(yaml) }
        #expect(elapsed < .seconds(1), "took \(elapsed)")
        #expect(found.first?.message.hasPrefix("too many aliases") == true, "\(found)")
    }

    /// Each alias adds a full copy of what its anchor marks, nested aliases included.
    @Test func aliasesAreCountedAsTheCopiesTheyStandFor() {
        let yaml = """
            a: &a [x, y]
            b: &b [*a, *a]
            c: *b
            """
        // *a adds 3 nodes, twice; b is then 7 nodes, which *b adds: 13 in all.
        #expect(GraphFileLimits.aliasProblem(in: yaml, limit: 13) == nil)
        let problem = GraphFileLimits.aliasProblem(in: yaml, limit: 12)
        #expect(problem?.line == 3)
        #expect(problem?.message.hasPrefix("too many aliases: with *b here, aliases add more than 12 nodes") == true)
        // A "*" that is not an alias costs nothing.
        #expect(GraphFileLimits.aliasProblem(in: "operations: [{id: a, command: 'ls *.txt'}]", limit: 0) == nil)
    }

    /// Shared settings through a few aliases still work.
    @Test func aFileWithAFewAliasesStillParses() throws {
        let graph = try GraphFile.parse("""
            operations:
              - id: fetch
                command: &fetch curl -s "https://example.com/$N"
                env: &env {LC_ALL: C, N: "1"}
                requires: &gpu [gpu, ssd]
              - id: fetch-2
                command: *fetch
                env: *env
                requires: *gpu
              - id: sum
                after: [fetch, fetch-2]
                kind: echo
                payload: {sources: [*fetch, *fetch], settings: *env}
            """)
        #expect(graph.operations.map(\.id) == ["fetch", "fetch-2", "sum"])
        #expect(graph.operations[0].payload == graph.operations[1].payload)
        #expect(graph.operations[1].requires == ["gpu", "ssd"])
        #expect(String(decoding: graph.operations[2].payload, as: UTF8.self)
                    == #"{"sources":["curl -s \"https://example.com/$N\"","curl -s \"https://example.com/$N\""],"settings":{"LC_ALL":"C","N":"1"}}"#)
    }

    @Test func aTextOverTheSizeLimitIsRefusedBeforeParsing() throws {
        let text = "# " + String(decoding: [UInt8](repeating: UInt8(ascii: "x"), count: GraphFile.maxFileBytes), as: UTF8.self)
        var found: [GraphProblem] = []
        let elapsed = ContinuousClock().measure { found = problems(text) }
        #expect(elapsed < .seconds(1), "took \(elapsed)")
        #expect(found.first?.message.hasPrefix("graph file too large: more than 64 MiB (67,108,866 bytes)") == true, "\(found)")
    }

    /// A large file is refused by its size, without reading it; a device that never ends, after the limit.
    @Test func loadRefusesLargeFilesAndEndlessInput() throws {
        let path = NSTemporaryDirectory() + "opq-large-\(UUID().uuidString).yaml"
        #expect(FileManager.default.createFile(atPath: path, contents: Data("operations: []\n".utf8)))
        defer { try? FileManager.default.removeItem(atPath: path) }
        #expect(truncate(path, off_t(GraphFile.maxFileBytes) * 4) == 0)      // sparse: no disk used
        for (file, expected) in [(path, "graph file too large: more than 64 MiB (268,435,456 bytes)"),
                                 ("/dev/zero", "graph file too large: more than 64 MiB (stopped reading at 67,108,865 bytes)")] {
            let start = ContinuousClock.now
            let error = #expect(throws: GraphFileError.self) { try GraphFile.load(path: file) }
            #expect(error?.problems.first?.message.hasPrefix(expected) == true, "\(String(describing: error))")
            #expect(ContinuousClock.now - start < .seconds(5), "\(file)")
        }
    }
}
