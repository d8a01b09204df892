/// What a client's or worker's socket monitor says about the coordinator's view of its keys (PROTOCOL.md
/// §12), as a pure value: feed it the monitor's events, and it says why the coordinator refuses this
/// peer — its key, keys it does not use, or keys it requires — or nil. One rule for opctl, the Swift API
/// and opworker, tested without sockets.
///
/// A refused key (ZAP) and a mechanism mismatch are reported by the handshake itself. A coordinator that
/// cannot open our CURVE hello (another coordinator key), or one that closes before our side notices the
/// mismatch, just closes: three connections closed before their handshake completed, over at least
/// `patience`, count as refused — a coordinator going down closes a few mid-handshake for a moment too.
public struct HandshakeWatch: Sendable {
    public let keyed: Bool
    public let patience: Duration
    private var closes = 0
    private var firstClose: ContinuousClock.Instant?
    private var completed = false

    public init(keyed: Bool, patience: Duration) {
        self.keyed = keyed
        self.patience = patience
    }

    public mutating func observe(_ event: MonitorEvent, at now: ContinuousClock.Instant) -> String? {
        switch event.kind {
        case .handshakeFailedAuth:
            return keyed ? "the coordinator does not allow this key (status \(event.value)): add its .pub key to the coordinator's allow file"
                         : "the coordinator requires a key"
        case .handshakeFailedProtocol where event.value == UInt32(ZMQProtocolError.mechanismMismatch):
            return keyed ? "the coordinator does not use keys: leave out --key and --coordinator-key"
                         : Self.keysRequired
        case .handshakeSucceeded:
            completed = true
            closes = 0
            firstClose = nil
        case .disconnected:
            defer { completed = false }
            guard !completed else { return nil }
            closes += 1
            if closes == 1 { firstClose = now }
            if closes >= 3, let first = firstClose, now - first >= patience {
                return keyed ? "the coordinator closed every connection during the CURVE handshake: --coordinator-key is probably not its public key"
                             : "the coordinator closed every connection during the handshake: it probably " + Self.keysRequired.dropFirst("the coordinator ".count)
            }
        default:
            break
        }
        return nil
    }

    static let keysRequired = "the coordinator requires keys (CURVE): pass --key YOUR.key and --coordinator-key ITS-PUBLIC-KEY (or $OPQ_KEY, $OPQ_COORDINATOR_KEY)"

    /// The events to monitor for it.
    public static let events: MonitorEvents = [.handshakeFailedAuth, .handshakeFailedProtocol, .handshakeSucceeded, .disconnected]
}
