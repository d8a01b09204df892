import ClusterTestSupport
import Foundation
import Testing
import WireProtocol

/// Issue 25, finding 4, through a real opcoord: acknowledged records missing from the newest segment
/// (cut mid-file, its last 32 KB zeroed from a record boundary, cut back to its header) stop the start, naming the segment,
/// the offset and how many records; `--salvage` goes on and logs the loss and the runs it may have hit.
@Suite(.serialized) struct JournalLossTests {
    enum Damage: String, CaseIterable { case truncatedMidFile, last32KBZeroed, cutBackToItsHeader }

    /// Offsets of the records of a version 2 segment (32-byte header; frames: u32 length, u32 ~length, u32 CRC).
    private func recordOffsets(_ bytes: [UInt8]) -> [Int] {
        var offsets: [Int] = []
        var at = 32
        while at + 12 <= bytes.count {
            let length = bytes[at..<(at + 4)].enumerated().reduce(0) { $0 | Int($1.element) << (8 * $1.offset) }
            guard length > 0, at + 12 + length <= bytes.count else { break }
            offsets.append(at)
            at += 12 + length
        }
        return offsets
    }

    private func log(_ c: LocalCluster, start: Int) -> String {
        (try? String(contentsOf: c.dir.appendingPathComponent("opcoord-\(start).log"), encoding: .utf8)) ?? ""
    }

    @Test(arguments: Damage.allCases)
    func lostAcknowledgedRecordsStopTheStartAndSalvageReportsThem(damage: Damage) throws {
        let c = try LocalCluster()
        defer { c.stop() }
        let payload = String(repeating: "x", count: 200)
        for b in 0..<8 {
            let ops = (0..<40).map { op("b\(b)-\($0)", payload: payload, queue: "j") }
            #expect(try c.submit(ops, run: "j").accepted)
        }
        let dir = try #require(c.stateDirectory)
        var damaged = ""
        var offset = 0
        var lostRecords = 0
        try c.restartCoordinator(crash: true) {
            let names = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasPrefix("journal-") }.sorted()
            damaged = dir + "/" + (try #require(names.last))
            let bytes = [UInt8](try Data(contentsOf: URL(fileURLWithPath: damaged)))
            let records = recordOffsets(bytes)
            switch damage {
            case .truncatedMidFile:
                let cut = records[records.count / 2] + 5
                offset = records[records.count / 2]
                lostRecords = records.count - records.count / 2
                try Data(bytes[..<cut]).write(to: URL(fileURLWithPath: damaged))
            case .last32KBZeroed:
                let first = try #require(records.firstIndex { $0 >= bytes.count - 32 << 10 })
                offset = records[first]
                lostRecords = records.count - first
                try Data(bytes[..<offset] + [UInt8](repeating: 0, count: bytes.count - offset)).write(to: URL(fileURLWithPath: damaged))
            case .cutBackToItsHeader:
                offset = 32
                lostRecords = records.count
                try Data(bytes[..<offset]).write(to: URL(fileURLWithPath: damaged))
            }
        }
        try c.waitUntil("opcoord refuses the journal", timeout: 20) { !c.coordinator.isRunning }
        #expect(c.coordinator.terminationStatus != 0)
        let refusal = log(c, start: 2)
        #expect(refusal.contains("journal file \(damaged) has lost acknowledged records"), "\(refusal)")
        #expect(refusal.contains("lost \(lostRecords) acknowledged records"), "\(refusal)")
        #expect(refusal.contains("after offset \(offset)"), "\(refusal)")
        #expect(!refusal.contains("torn tail"), "\(refusal)")

        try c.restartCoordinator(extraArgs: ["--salvage"])
        try c.waitUntil("the salvaging coordinator answers", timeout: 20) { (try? c.statusReply()) != nil }
        let started = log(c, start: 3)
        #expect(started.contains("ACKNOWLEDGED RECORDS LOST") && started.contains("lost \(lostRecords) acknowledged records"), "\(started)")
        #expect(started.contains("salvage gave up acknowledged records"), "\(started)")
    }
}
