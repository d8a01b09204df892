@_spi(Benchmarks) import DistributedOperationQueue
import Foundation
import WireProtocol

/// JSONEncoder vs the typed API's JSON coders (the same bytes, faster) vs PropertyListEncoder (binary) vs
/// protobuf (a message with the same fields) on one representative value: bytes per value, and encode +
/// decode time per value.
struct EncodingRow {
    var name: String
    var bytes: Int
    var encodeNs: Double
    var decodeNs: Double
}

enum EncodingBench {
    static let sample = Sample(kind: "thumbnail", requires: ["gpu"], missingTags: [], noWorkerKind: false,
                               opIds: ["Thumbnail:swift-1a2b3c4d-17", "Thumbnail:swift-1a2b3c4d-18"], opCount: 2)

    static func run(count: Int) throws -> [EncodingRow] {
        var message = WireUnplaceable()
        message.kind = sample.kind
        message.requires = sample.requires
        message.missingTags = sample.missingTags
        message.noWorkerKind = sample.noWorkerKind
        message.opIds = sample.opIds
        message.opCount = sample.opCount
        let plist = PropertyListEncoder()
        plist.outputFormat = .binary
        return [
            try measure("json", count, encode: { try JSONEncoder().encode(sample) },
                        decode: { _ = try JSONDecoder().decode(Sample.self, from: $0) }),
            try measure("json-typed-coding", count, encode: { Data(try TypedCodingSteps.encode(sample)) },
                        decode: { _ = try TypedCodingSteps.decode(Sample.self, from: Array($0)) }),
            try measure("plist-binary", count, encode: { try plist.encode(sample) },
                        decode: { _ = try PropertyListDecoder().decode(Sample.self, from: $0) }),
            try measure("protobuf", count, encode: { try message.serializedData() },
                        decode: { _ = try WireUnplaceable(serializedBytes: $0) }),
        ]
    }

    private static func measure(_ name: String, _ count: Int, encode: () throws -> Data,
                                decode: (Data) throws -> Void) throws -> EncodingRow {
        let data = try encode()
        for _ in 0..<count / 10 { _ = try encode(); try decode(data) }          // warm up
        let clock = ContinuousClock()
        var start = clock.now
        for _ in 0..<count { _ = try encode() }
        let enc = clock.now - start
        start = clock.now
        for _ in 0..<count { try decode(data) }
        let dec = clock.now - start
        func ns(_ d: Duration) -> Double { (Double(d.components.seconds) * 1e9 + Double(d.components.attoseconds) / 1e9) / Double(count) }
        return EncodingRow(name: name, bytes: data.count, encodeNs: ns(enc), decodeNs: ns(dec))
    }
}
