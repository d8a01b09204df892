@testable import Journal
import SchedulerCore
import Testing

/// The payload encoding and the record frame: exact round trips, and total decoding of damaged input.
struct CodecTests {
    @Test func crc32cMatchesTheStandardCheckValue() {
        #expect(CRC32C.checksum(Array("123456789".utf8)) == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8]()) == 0)
        // 32 zero bytes and 32 0xFF bytes: the RFC 3720 (iSCSI) test vectors.
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
    }

    @Test func crc32cSlicingAgreesWithTheBytewiseDefinitionAtEveryLengthAndAlignment() {
        var rng = SplitMix64(seed: 7)
        let data = (0..<600).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
        for start in 0..<9 {
            for length in [0, 1, 7, 8, 9, 15, 16, 17, 63, 64, 65, 255, 511] where start + length <= data.count {
                let slice = Array(data[start..<(start + length)])
                #expect(CRC32C.checksum(slice) == bytewiseCRC32C(slice), "start \(start) length \(length)")
                // The table loop too, where the processor's instruction does the checksum above.
                let byTable = slice.withUnsafeBytes { CRC32C.checksum($0, byInstruction: false) }
                #expect(byTable == bytewiseCRC32C(slice), "table loop: start \(start) length \(length)")
            }
        }
        // In pieces, continuing from the previous result.
        let whole = CRC32C.checksum(data)
        #expect(CRC32C.checksum(Array(data[300...]), continuing: CRC32C.checksum(Array(data[..<300]))) == whole)
        #if arch(x86_64)
        // Every x86-64 processor since 2008 has SSE 4.2: the journal uses its instruction.
        #expect(CRC32C.hardware, "no SSE 4.2 CRC-32C instruction found")
        #endif
    }

    @Test(arguments: 0..<RandomEntries.caseCount)
    func everyRecordCaseRoundTripsExactly(recordCase: Int) throws {
        var random = RandomEntries(seed: 1000 + UInt64(recordCase))
        for _ in 0..<300 {
            let entry = random.entry(case: recordCase)
            var bytes: [UInt8] = [0xAA, 0xBB]  // encode appends: decode a slice that does not start at 0
            JournalCodec.encode(entry, into: &bytes)
            #expect(bytes[0] == 0xAA && bytes[2] == JournalCodec.version)
            let decoded = try JournalCodec.decode(bytes[2...])
            #expect(decoded == entry)
        }
    }

    @Test func nilAndEmptyStayDistinct() throws {
        let some = OperationSpec(id: "a", name: "", qos: .background, timeoutMicros: 0)
        let none = OperationSpec(id: "a", name: nil, qos: nil, timeoutMicros: nil)
        for op in [some, none] {
            let entry = JournalEntry(at: -1, record: .submitted(run: "", submitter: "", ops: [op], queues: [],
                                                                 key: SubmissionKey(key: "", digest: 0)))
            var bytes: [UInt8] = []
            JournalCodec.encode(entry, into: &bytes)
            #expect(try JournalCodec.decode(bytes[...]) == entry)
        }
    }

    @Test func aSmallNoopSubmitIsCompact() {
        var bytes: [UInt8] = []
        JournalCodec.encode(RandomEntries.smallSubmit(12345), into: &bytes)
        // 8 of them are the µs timestamp, 7 the default retry delays; 76 on disk with the frame.
        #expect(bytes.count <= 64, "\(bytes.count) bytes")
    }

    @Test func everyTruncationIsRejected() {
        var random = RandomEntries(seed: 42)
        for c in 0..<(RandomEntries.caseCount * 20) {
            var bytes: [UInt8] = []
            JournalCodec.encode(random.entry(case: c % RandomEntries.caseCount), into: &bytes)
            for cut in 0..<bytes.count {
                // A strict prefix runs out before the entry ends: always an error, never a trap.
                #expect(throws: JournalCodecError.self) { try JournalCodec.decode(bytes[..<cut]) }
            }
        }
    }

    @Test func randomByteFlipsDecodeOrThrowButNeverCrash() {
        var random = RandomEntries(seed: 4242)
        var rng = SplitMix64(seed: 99)
        let records: [[UInt8]] = (0..<200).map { i in
            var bytes: [UInt8] = []
            JournalCodec.encode(random.entry(case: i % RandomEntries.caseCount), into: &bytes)
            return bytes
        }
        var decoded = 0, rejected = 0
        for _ in 0..<10_000 {
            var bytes = rng.pick(records)
            for _ in 0..<(1 + rng.int(3)) {
                bytes[rng.int(bytes.count)] ^= UInt8(1 + rng.int(255))
            }
            do {
                _ = try JournalCodec.decode(bytes[...])
                decoded += 1
            } catch {
                rejected += 1
                #expect(!error.reason.isEmpty && error.offset >= 0 && error.offset <= bytes.count)
            }
        }
        #expect(decoded + rejected == 10_000)
        #expect(rejected > 1000, "most damage is noticed by the codec itself (the frame CRC catches the rest)")
    }

    @Test func hostileLengthsAreErrorsNotAllocations() throws {
        // version, at = 0, tag submitted, run "", submitter "", op count 2^62 (a 9-byte varint).
        let bytes: [UInt8] = [1, 0, 1, 0, 0] + [UInt8](repeating: 0x80, count: 8) + [0x40]
        let error = try #require(throws: JournalCodecError.self) { try JournalCodec.decode(bytes[...]) }
        #expect(error.reason.contains("does not fit"))
        // A string length past the end.
        let long: [UInt8] = [1, 0, 8, 0xFF, 0xFF, 0x03, 0x41]
        let e2 = try #require(throws: JournalCodecError.self) { try JournalCodec.decode(long[...]) }
        #expect(e2.reason.contains("exceeds"))
        // An 11-byte varint.
        let varint: [UInt8] = [1] + [UInt8](repeating: 0xFF, count: 10) + [1]
        let e3 = try #require(throws: JournalCodecError.self) { try JournalCodec.decode(varint[...]) }
        #expect(e3.reason.contains("64 bits"))
        // Invalid UTF-8, an unknown tag, bad bools, a wrong version, trailing bytes.
        for (bad, words) in [([1, 0, 8, 1, 0xC3] as [UInt8], "UTF-8"), ([1, 0, 16], "tag"),
                             ([1, 0, 6, 0, 0, 2], "boolean"), ([2, 0, 8, 0], "version"), ([1, 0, 8, 0, 0], "after the end")] {
            let e = try #require(throws: JournalCodecError.self) { try JournalCodec.decode(bad[...]) }
            #expect(e.reason.contains(words), "\(e)")
        }
    }

    @Test func aBatchFramesEachRecordWithItsLengthCheckAndCRC() throws {
        var random = RandomEntries(seed: 5)
        var batch = JournalBatch()
        let entries = (0..<50).map { _ in random.entry() }
        for e in entries { batch.add(e) }
        #expect(batch.count == 50)
        var seen: [JournalEntry] = []
        let end = try batch.bytes.withUnsafeBytes { raw in
            try JournalFormat.scan(raw, from: 0) { _, payload in
                seen.append(try JournalCodec.decode(payload))
                return nil
            }
        }
        #expect(end == .clean)
        #expect(seen == entries)
    }
}

func bytewiseCRC32C(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for b in bytes {
        crc ^= UInt32(b)
        for _ in 0..<8 { crc = (crc & 1) != 0 ? (crc >> 1) ^ 0x82F6_3B78 : crc >> 1 }
    }
    return ~crc
}
