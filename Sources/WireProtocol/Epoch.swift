// (1.9) Leadership epochs on the wire (PROTOCOL.md §14): a coordinator run with --ha stamps its epoch on
// every message the fencing rule covers; workers and clients keep the highest epoch seen and drop
// messages with a lower one (`EpochFence`). 0 = no epoch (a coordinator without --ha): never fenced.

extension Message {
    /// The epoch this message carries; nil for messages that carry none (HEARTBEAT, and what peers send).
    public var epoch: UInt64? {
        switch self {
        case .welcome(let m): m.epoch
        case .dispatch(let m): m.epoch
        case .cancel(let m): m.epoch
        case .disconnect(let m): m.epoch
        case .submitReply(let m): m.epoch
        case .ack(let m): m.epoch
        case .statusReply(let m): m.epoch
        case .whyReply(let m): m.epoch
        case .workersReply(let m): m.epoch
        case .event(let m): m.epoch
        case .waitReply(let m): m.epoch
        case .error(let m): m.epoch
        case .runsReply(let m): m.epoch
        case .logsReply(let m): m.epoch
        case .storyReply(let m): m.epoch
        case .haReply(let m): m.epoch
        default: nil
        }
    }

    /// This message with `epoch` set, where it carries one (others are returned as they are).
    public func stamped(epoch: UInt64) -> Message {
        switch self {
        case .welcome(var m): m.epoch = epoch; return .welcome(m)
        case .dispatch(var m): m.epoch = epoch; return .dispatch(m)
        case .cancel(var m): m.epoch = epoch; return .cancel(m)
        case .disconnect(var m): m.epoch = epoch; return .disconnect(m)
        case .submitReply(var m): m.epoch = epoch; return .submitReply(m)
        case .ack(var m): m.epoch = epoch; return .ack(m)
        case .statusReply(var m): m.epoch = epoch; return .statusReply(m)
        case .whyReply(var m): m.epoch = epoch; return .whyReply(m)
        case .workersReply(var m): m.epoch = epoch; return .workersReply(m)
        case .event(var m): m.epoch = epoch; return .event(m)
        case .waitReply(var m): m.epoch = epoch; return .waitReply(m)
        case .error(var m): m.epoch = epoch; return .error(m)
        case .runsReply(var m): m.epoch = epoch; return .runsReply(m)
        case .logsReply(var m): m.epoch = epoch; return .logsReply(m)
        case .storyReply(var m): m.epoch = epoch; return .storyReply(m)
        case .haReply(var m): m.epoch = epoch; return .haReply(m)
        default: return self
        }
    }
}

/// The `epoch` field (90, varint) as bytes to append to an encoded body: protobuf takes fields in any
/// order, so an EVENT body encoded once for many watchers gets the leader's epoch without re-encoding.
public enum EpochField {
    public static let number = 90

    public static func bytes(_ epoch: UInt64) -> [UInt8] {
        guard epoch > 0 else { return [] }
        var out: [UInt8] = [0xD0, 0x05]   // tag (90 << 3) | varint, as a varint
        var v = epoch
        while v >= 0x80 { out.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
        out.append(UInt8(v))
        return out
    }
}

/// What a worker or client remembers of epochs: the highest seen. A message with a lower non-zero epoch
/// comes from a leader that has been replaced (it may not know yet) and is ignored.
public struct EpochFence: Sendable, Equatable {
    public private(set) var highest: UInt64 = 0
    /// Messages ignored for a stale epoch.
    public private(set) var fenced = 0

    public init() {}

    /// Whether to act on `message`; remembers its epoch when it is the highest yet.
    public mutating func admit(_ message: Message) -> Bool {
        guard let e = message.epoch, e > 0 else { return true }
        if e < highest { fenced += 1; return false }
        highest = e
        return true
    }
}

/// (1.9) What an ERROR `NOT_LEADER` says (PROTOCOL.md §14): the message text is exactly
/// `not the leader; leader: ENDPOINT` or `not the leader; no leader elected yet`.
public enum NotLeader {
    public static let prefix = "not the leader; "
    public static let noLeaderText = prefix + "no leader elected yet"

    public static func text(leader: String?) -> String {
        leader.map { prefix + "leader: " + $0 } ?? noLeaderText
    }

    /// The leader's endpoint named by an ERROR NOT_LEADER's message, nil when none is elected yet.
    public static func leader(in message: String) -> String? {
        let marker = prefix + "leader: "
        guard message.hasPrefix(marker) else { return nil }
        let rest = message.dropFirst(marker.count)
        return rest.isEmpty ? nil : String(rest)
    }
}
