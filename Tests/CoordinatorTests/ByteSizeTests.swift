@testable import Coordinator
import Testing

/// `opcoord --retain-bytes` values (issue 25 finding 3).
struct ByteSizeTests {
    @Test func unitsSharesAndBadText() {
        #expect(ByteSize.bytes("1048576") == 1 << 20)
        #expect(ByteSize.bytes("256MiB") == 256 << 20)
        #expect(ByteSize.bytes("256M") == 256 << 20)
        #expect(ByteSize.bytes("1.5GiB") == 3 << 29)
        #expect(ByteSize.bytes("25%", physicalMemory: 8 << 30) == 2 << 30)
        for bad in ["", "0", "-1MiB", "12 parsecs", "101%", "0%", "MiB", "nan"] {
            #expect(ByteSize.bytes(bad) == nil, "\(bad)")
        }
    }
}
