import CZeroMQ

/// Flags for sends. `.more` marks a frame that is followed by another frame of the same message.
public struct SendFlags: OptionSet, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    /// Do not block: return `false` if the message cannot be queued now.
    public static let dontWait = SendFlags(rawValue: ZMQ_DONTWAIT)
    /// Another frame of this message follows (ZMQ_SNDMORE).
    public static let more = SendFlags(rawValue: ZMQ_SNDMORE)
}

/// Flags for receives.
public struct ReceiveFlags: OptionSet, Sendable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }
    /// Do not block: return `nil`/`false` if nothing is queued.
    public static let dontWait = ReceiveFlags(rawValue: ZMQ_DONTWAIT)
}

/// A libzmq message frame (`zmq_msg_t`) for the paths where copies matter. Named `Frame`, not libzmq's
/// "message", because `Message` is the protocol's (WireProtocol.Message, one OQP message).
///
/// Receiving into one reused `Frame` (`Socket.receive(into:)`) allocates nothing for small frames
/// (libzmq keeps ≤ 33-byte frames inline) and never copies the payload into Swift memory; read it with
/// `withUnsafeBytes`. Sending a `Frame` hands its content to libzmq and leaves it empty.
/// Not `Sendable`, like `Socket`.
public final class Frame {
    let msg: UnsafeMutablePointer<zmq_msg_t>
    /// Whether more frames follow this one (valid after a receive).
    public internal(set) var more = false

    /// An empty frame.
    public init() {
        msg = .allocate(capacity: 1)
        zmq_msg_init(msg)
    }

    /// A frame holding a copy of `bytes`.
    public convenience init(_ bytes: UnsafeRawBufferPointer) {
        self.init(count: bytes.count)
        if let base = bytes.baseAddress, !bytes.isEmpty {
            zmq_msg_data(msg).copyMemory(from: base, byteCount: bytes.count)
        }
    }

    /// A frame holding a copy of `bytes`.
    public convenience init(_ bytes: [UInt8]) {
        self.init(count: bytes.count)
        bytes.withUnsafeBytes { src in
            if let base = src.baseAddress, !src.isEmpty { zmq_msg_data(msg).copyMemory(from: base, byteCount: src.count) }
        }
    }

    /// A frame of `count` uninitialised bytes, to fill with `withUnsafeMutableBytes` before sending.
    public init(count: Int) {
        msg = .allocate(capacity: 1)
        if zmq_msg_init_size(msg, count) != 0 {
            // Only fails on ENOMEM; an empty frame is the honest fallback (count will say 0).
            zmq_msg_init(msg)
        }
    }

    deinit {
        zmq_msg_close(msg)
        msg.deallocate()
    }

    /// Size in bytes.
    public var count: Int { zmq_msg_size(msg) }

    public func withUnsafeBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: zmq_msg_data(msg), count: zmq_msg_size(msg)))
    }

    public func withUnsafeMutableBytes<R>(_ body: (UnsafeMutableRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeMutableRawBufferPointer(start: zmq_msg_data(msg), count: zmq_msg_size(msg)))
    }

    /// A frame with the same content, not copied: libzmq counts references to content over 33 bytes,
    /// so one body sent to thousands of peers is in memory once. Neither frame's content may change.
    public func sharingContent() -> Frame {
        let f = Frame()
        zmq_msg_copy(f.msg, msg)
        return f
    }

    /// A copy of the content.
    public var bytes: [UInt8] { withUnsafeBytes { [UInt8]($0) } }
}

@available(*, unavailable, message: "a Frame belongs to one thread, like its Socket")
extension Frame: Sendable {}
