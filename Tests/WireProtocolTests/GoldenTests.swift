import Foundation
import Testing
@testable import WireProtocol

/// Encoded bytes of a few messages, frozen. If one of these fails, the wire format
/// changed: that is a protocol version bump, not a test update.
@Suite struct GoldenTests {
    static let vectors: [(Command, String, String)] = [
        // (command, header hex, body hex) of Fixtures.all's message for that command
        (.hello, "4f51010100000000",
         "08011209686f73742d613a34321804220367707522037373642a046563686f2a046e6f6f702a057368656c6c"),
        (.dispatch, "4f51010500000000",
         "0a2b0a046f702d30180122046563686f2a0400010203320b0a056465702d3012027230380840044a044f7020300a2d0a046f702d31"
         + "1001180222046563686f2a0401010203320b0a056465702d3112027231380840044a044f7020310a2d0a046f702d32100218012204"
         + "6563686f2a0402010203320b0a056465702d3212027232380840044a044f702032"),
        (.finished, "4f51010800000000",
         "0a120a046f702d3018012208726573756c742d300a100a046f702d3118012a06626f6f6d20310a110a046f702d321801320774696d656f75741003"),
        (.heartbeat, "4f51010a00000000", ""),
        (.submit, "4f5101200000000b",
         "0a0e0a0672656e64657210041802200012150a01611a0672656e64657222046563686f2a026869122a0a016212034265652205736865"
         + "6c6c32016138074005480250015801600568a0cb980172036770757801"),
        (.error, "4f51013000000014", "0806120f6e6f206f7065726174696f6e207a7a182822027a7a"),
    ]

    @Test func testGoldenVectors() throws {
        // PRINT_GOLDEN=1 swift test prints fresh vectors (for an intended version bump only).
        if ProcessInfo.processInfo.environment["PRINT_GOLDEN"] != nil {
            for env in Fixtures.all where [.hello, .dispatch, .finished, .heartbeat, .submit, .error].contains(env.message.command) {
                let f = WireCodec.encode(env.message, requestID: env.requestID)
                print("GOLDEN (.\(env.message.command), \"\(hex(f[0]))\", \"\(hex(f[1]))\"),")
            }
        }
        #expect(Self.vectors.count == 6)
        for (command, header, body) in Self.vectors {
            let env = try #require(Fixtures.all.first { $0.message.command == command })
            let frames = WireCodec.encode(env.message, requestID: env.requestID)
            #expect(hex(frames[0]) == header, "\(command) header")
            #expect(hex(frames[1]) == body, "\(command) body")
            #expect(WireCodec.decode([unhex(header), unhex(body)]) == .success(env), "\(command) decodes")
        }
    }
}
