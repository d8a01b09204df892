import CZeroMQ

extension Socket {
    // MARK: send

    /// Sends one frame (a copy of `buffer`). Returns `false` only if it would block (`.dontWait`, a full
    /// high-water mark, or `.sendTimeout` expired); `true` when queued. Throws on real errors, e.g.
    /// EHOSTUNREACH from a ROUTER with `routerMandatory`.
    @discardableResult
    public func send(_ buffer: UnsafeRawBufferPointer, flags: SendFlags = []) throws -> Bool {
        let h = try live("zmq_send")
        while true {
            if zmq_send(h, buffer.baseAddress, buffer.count, flags.rawValue) >= 0 { return true }
            let e = zmq_errno()
            if e == EINTR { continue }
            if e == EAGAIN { return false }
            throw ZMQError(errno: e, operation: "zmq_send")
        }
    }

    /// Sends one frame (a copy of `bytes`). See `send(_:flags:)` for the result.
    @discardableResult
    public func send(_ bytes: [UInt8], flags: SendFlags = []) throws -> Bool {
        try bytes.withUnsafeBytes { try send($0, flags: flags) }
    }

    /// Sends one frame (UTF-8 bytes of `text`, no terminator).
    @discardableResult
    public func send(_ text: String, flags: SendFlags = []) throws -> Bool {
        var text = text
        return try text.withUTF8 { try send(UnsafeRawBufferPointer($0), flags: flags) }
    }

    /// Sends `frame` without copying it; on success the frame is left empty (libzmq owns the data now).
    @discardableResult
    public func send(_ frame: Frame, flags: SendFlags = []) throws -> Bool {
        let h = try live("zmq_msg_send")
        while true {
            if zmq_msg_send(frame.msg, h, flags.rawValue) >= 0 { return true }
            let e = zmq_errno()
            if e == EINTR { continue }
            if e == EAGAIN { return false }
            throw ZMQError(errno: e, operation: "zmq_msg_send")
        }
    }

    /// Sends a multipart message. libzmq delivers all frames or none. With `.dontWait`, `false` means
    /// nothing was sent; once the first frame is accepted the rest cannot block and are sent at once.
    /// `flags` must not contain `.more` unless more frames follow in a later call.
    @discardableResult
    public func sendMultipart(_ frames: [[UInt8]], flags: SendFlags = []) throws -> Bool {
        guard let last = frames.indices.last else {
            throw ZMQError(errno: EINVAL, message: "a message has at least one frame", operation: "zmq_send")
        }
        for i in frames.indices {
            var f = flags
            if i != last { f.insert(.more) }
            if i != frames.startIndex { f.remove(.dontWait) }
            if try !send(frames[i], flags: f) {
                guard i == frames.startIndex else {
                    throw ZMQError(errno: EAGAIN, message: "would block inside a multipart message", operation: "zmq_send")
                }
                return false
            }
        }
        return true
    }

    /// Sends `frames` then `last` (not copied: see `Frame.sharingContent`) as one message; results as
    /// `sendMultipart(_:flags:)`.
    @discardableResult
    public func sendMultipart(_ frames: [[UInt8]], last: Frame, flags: SendFlags = []) throws -> Bool {
        var f = flags
        f.insert(.more)
        for i in frames.indices {
            if i != frames.startIndex { f.remove(.dontWait) }
            if try !send(frames[i], flags: f) {
                guard i == frames.startIndex else {
                    throw ZMQError(errno: EAGAIN, message: "would block inside a multipart message", operation: "zmq_send")
                }
                return false
            }
        }
        var lastFlags = flags
        if !frames.isEmpty { lastFlags.remove(.dontWait) }
        if try !send(last, flags: lastFlags) {
            guard frames.isEmpty else {
                throw ZMQError(errno: EAGAIN, message: "would block inside a multipart message", operation: "zmq_msg_send")
            }
            return false
        }
        return true
    }

    // MARK: receive

    /// Receives one frame as a new array. `nil` means nothing was ready (`.dontWait` or `.receiveTimeout`).
    /// `moreToReceive` tells whether further frames of the same message follow.
    public func receive(flags: ReceiveFlags = []) throws -> [UInt8]? {
        guard try receiveRaw(scratch, flags: flags, operation: "zmq_msg_recv") else { return nil }
        let count = zmq_msg_size(scratch)
        guard count > 0, let source = zmq_msg_data(scratch) else { return [] }
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            UnsafeMutableRawPointer(buffer.baseAddress!).copyMemory(from: source, byteCount: count)
            initialized = count
        }
    }

    /// Receives one frame into `frame`, replacing its content without copying. `false` means nothing
    /// was ready. `frame.more` (and `moreToReceive`) tell whether further frames follow.
    public func receive(into frame: Frame, flags: ReceiveFlags = []) throws -> Bool {
        guard try receiveRaw(frame.msg, flags: flags, operation: "zmq_msg_recv") else { return false }
        frame.more = moreToReceive
        return true
    }

    /// Receives every frame of one message. `nil` means no message was ready (only the first frame can
    /// be "not ready": libzmq delivers the frames of a message together). A ROUTER gets the sender's
    /// routing id as the first frame.
    public func receiveMultipart(flags: ReceiveFlags = []) throws -> [[UInt8]]? {
        guard let first = try receive(flags: flags) else { return nil }
        var frames: [[UInt8]] = []
        frames.reserveCapacity(4)  // one allocation for the usual [routing id, header, body]
        frames.append(first)
        while moreToReceive {
            guard let next = try receive() else {
                // Only a receive timeout can get here; the rest of the message is in libzmq already.
                throw ZMQError(errno: EAGAIN, message: "timed out inside a multipart message", operation: "zmq_msg_recv")
            }
            frames.append(next)
        }
        return frames
    }

    /// Like `receiveMultipart`, plus one metadata property of the message (`zmq_msg_gets`): "User-Id"
    /// (what the ZAP handler said about the peer's key), "Peer-Address", or a ZMTP property. nil when the
    /// message does not carry it.
    public func receiveMultipart(flags: ReceiveFlags = [], property: String) throws -> (frames: [[UInt8]], property: String?)? {
        guard let first = try receive(flags: flags) else { return nil }
        // A ROUTER's routing-id frame carries no metadata; the peer's frames do.
        var value = zmq_msg_gets(scratch, property).map { String(cString: $0) }
        var frames: [[UInt8]] = []
        frames.reserveCapacity(4)
        frames.append(first)
        while moreToReceive {
            guard let next = try receive() else {
                throw ZMQError(errno: EAGAIN, message: "timed out inside a multipart message", operation: "zmq_msg_recv")
            }
            if value == nil { value = zmq_msg_gets(scratch, property).map { String(cString: $0) } }
            frames.append(next)
        }
        return (frames, value)
    }

    /// Discards the remaining frames of a partly received message; returns how many were dropped.
    @discardableResult
    public func discardRemainingFrames() throws -> Int {
        var dropped = 0
        while moreToReceive, try receiveRaw(scratch, flags: [], operation: "zmq_msg_recv") { dropped += 1 }
        return dropped
    }

    @inline(__always)
    func receiveRaw(_ msg: UnsafeMutablePointer<zmq_msg_t>, flags: ReceiveFlags, operation: String) throws -> Bool {
        let h = try live(operation)
        while true {
            if zmq_msg_recv(msg, h, flags.rawValue) >= 0 {
                moreToReceive = zmq_msg_more(msg) != 0
                return true
            }
            let e = zmq_errno()
            if e == EINTR { continue }
            if e == EAGAIN { return false }
            throw ZMQError(errno: e, operation: operation)
        }
    }
}
