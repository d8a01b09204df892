import Foundation
import Testing

/// scripts/gen-proto marks the properties of SwiftProtobuf's `_StorageClass`es `@exclusivity(unchecked)`:
/// without it every field read and write of the large messages (Operation, QueueSettings, OpStatus, …) is a
/// dynamic exclusivity check, ~40 % of a client's CPU per submitted operation (docs/BENCHMARKS.md, "The
/// client's exclusivity checks"). A regeneration by hand without the script's step fails here.
@Suite struct GeneratedStorageTests {
    static let generated = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/WireProtocol/Generated/opqueue.pb.swift")

    @Test func everyStoragePropertyIsUncheckedForExclusivity() throws {
        let lines = try String(contentsOf: Self.generated, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false)
        var inStorage = false, classes = 0, marked = 0
        var unmarked: [String] = []
        for line in lines {
            if line.contains("fileprivate class _StorageClass {") { inStorage = true; classes += 1; continue }
            if line.contains("defaultInstance = _StorageClass()") { inStorage = false; continue }
            guard inStorage, line.contains(" var _") else { continue }
            if line.hasPrefix("    @exclusivity(unchecked) var _") { marked += 1 } else { unmarked.append(String(line)) }
        }
        #expect(classes >= 5, "the schema's heap-stored messages (Operation among them)")
        #expect(unmarked.isEmpty, "run scripts/gen-proto (it marks them); unmarked: \(unmarked.prefix(5))")
        #expect(marked > 40)
    }
}
