/// Protocol limits (docs/PROTOCOL.md §Limits). Decoding rejects anything over them
/// with a typed `WireError` before or right after parsing, so a peer cannot make
/// the receiver allocate more than a small multiple of `maxBodySize`.
public enum WireLimits {
    /// Bytes in the header frame (signature, version, command, request id).
    public static let headerSize = 8
    /// Largest body frame accepted (16 MiB).
    public static let maxBodySize = 16 << 20
    /// The ERROR (BUSY, with the WATCH's request id) that ends a stream the client did not read fast
    /// enough (§13): the client makes the WATCH again and re-reads what it shows (PROTOCOL.md §5.22).
    public static let watchTooSlow = "watch too slow: resubscribe"
    /// Largest frame of any kind; transports set ZMQ_MAXMSGSIZE to at least this.
    public static let maxFrameSize = maxBodySize
    /// What every opqueue socket sets as ZMQ_MAXMSGSIZE: the largest frame plus slack, so an oversized
    /// body still arrives and is refused with a precise error rather than dropping the connection.
    public static let socketMaxMessageSize = Int64(maxFrameSize + 1024)
    /// Records in one batch (DISPATCH, STARTED, PROGRESS, FINISHED, CANCEL, SUBMIT, EVENT,
    /// and any repeated field of a message).
    public static let maxBatchRecords = 8192
    /// Repeated elements (records, inputs, list strings) in one body, all levels together.
    public static let maxElements = 262_144
    /// Operation payload bytes.
    public static let maxPayloadSize = 1 << 20
    /// Result bytes of one operation (succeeded outcome, dispatch input).
    public static let maxResultSize = 1 << 20
    /// Inputs of one dispatch record.
    public static let maxInputsPerRecord = 1024
    /// UTF-8 bytes of an id, name, kind, tag, queue name or worker id.
    public static let maxIDLength = 1024
    /// UTF-8 bytes of an error text, reason or message.
    public static let maxTextLength = 64 << 10
    /// Parts of one operation; part indices are below it.
    public static let maxParts = 65_536
    /// Bytes of one output tail (stdout or stderr) on a FINISHED record (1.5), and in a LOGS reply's
    /// attempt; `opworker --log-tail-bytes` is at most this.
    public static let maxLogTailSize = 1 << 20
    /// (1.8) A queue's fairness: share weights (`QueueFairness.maxWeight`), weights named in one setting,
    /// the highest rate (and burst; per key too).
    public static let maxShareWeight: UInt32 = 1_000
    public static let maxShareWeights = 1_024
    public static let maxRatePerSecond: Double = 1_000_000
    /// Largest credit in one grant.
    public static let maxCredit: UInt32 = 1_000_000
    /// HELLO: handler kinds and tags one worker may name, and the bytes of each (a peer's HELLO is
    /// kept while it is registered, so it is bounded per peer).
    public static let maxWorkerKinds = 256
    public static let maxWorkerTags = 64
    public static let maxWorkerLabelLength = 256
    /// What a reply (STATUS, WAIT) may carry before it leaves the rest out and says so: well under
    /// `maxBodySize`, so every reply fits the frame limit it imposes on others.
    public static let replyBudget = 12 << 20
    /// What the batching helpers aim for per body, leaving room under `maxBodySize`.
    public static let batchBodyBudget = maxBodySize - (64 << 10)
}

/// Protocol constants.
public enum WireVersion {
    /// The two signature bytes "OQ" that open every header frame.
    public static let signature: (UInt8, UInt8) = (0x4F, 0x51)
    /// The protocol version this library speaks.
    public static let current: UInt8 = 1
    /// Defaults the coordinator announces in WELCOME.
    public static let defaultHeartbeatIntervalMs: UInt32 = 1000
    public static let defaultLiveness: UInt32 = 3
}
