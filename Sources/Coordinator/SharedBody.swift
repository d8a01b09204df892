import ZeroMQ

/// A message body sent to many peers as it is (an EVENT body of a stream, `EventStreams`): its bytes
/// are in libzmq's memory once, and every send, now or after the durability gate, shares them
/// (`Frame.sharingContent`) instead of copying them per peer. Thousands of watchers that read slowly
/// otherwise held a copy each (docs/BENCHMARKS.md, "slow-readers").
final class SharedBody {
    let bytes: [UInt8]
    private var made: Frame?

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    /// A frame with the body's content, not copied.
    func frame() -> Frame {
        if let made { return made.sharingContent() }
        let f = Frame(bytes)
        made = f
        return f.sharingContent()
    }
}
