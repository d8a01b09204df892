import WireProtocol

// libFuzzer entry for the decoder (built only by scripts/fuzz, with OPQUEUE_FUZZ=1).
//
// Input layout, so the fuzzer reaches every body parser quickly:
//   byte 0 even: frames = [valid header for command byte 1, body = bytes 2...]
//   byte 0 odd:  raw frames: byte 1 % 5 frames, each prefixed by a 1-byte length
//                (the last takes the rest) — exercises the framing checks.
// Property: decoding never traps, and whatever decodes re-encodes to an equal message.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzDecode(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    guard bytes.count >= 2 else {
        _ = WireCodec.decode([bytes])
        return 0
    }
    var frames: [[UInt8]] = []
    if bytes[0] & 1 == 0 {
        frames = [[0x4F, 0x51, 1, bytes[1], 0, 0, 0, 7], Array(bytes[2...])]
    } else {
        let count = Int(bytes[1] % 5)
        var i = 2
        for k in 0..<count {
            if k == count - 1 || i >= bytes.count {
                frames.append(Array(bytes[min(i, bytes.count)...]))
                i = bytes.count
            } else {
                let len = Int(bytes[i])
                let end = min(bytes.count, i + 1 + len)
                frames.append(Array(bytes[(i + 1)..<end]))
                i = end
            }
        }
    }
    if case .success(let env) = WireCodec.decode(frames) {
        let again = WireCodec.decode(WireCodec.encode(env.message, requestID: env.requestID))
        if again != .success(env) {
            fatalError("re-encoding changed the message: \(env) -> \(again)")
        }
    } else {
        _ = WireCodec.peekHeader(frames)
    }
    return 0
}
