/// Command codes carried in byte 3 of the header frame.
public enum Command: UInt8, Sendable, CaseIterable, CustomStringConvertible {
    // Worker conversation.
    case hello = 0x01
    case welcome = 0x02
    case reject = 0x03
    case credit = 0x04
    case dispatch = 0x05
    case started = 0x06
    case progress = 0x07
    case finished = 0x08
    case cancel = 0x09
    case heartbeat = 0x0A
    case disconnect = 0x0B
    // Client conversation.
    case submit = 0x20
    case submitReply = 0x21
    case cancelOps = 0x22
    case queue = 0x23
    case setPriority = 0x24
    case ack = 0x25
    case status = 0x26
    case statusReply = 0x27
    case why = 0x28
    case whyReply = 0x29
    case workers = 0x2A
    case workersReply = 0x2B
    case watch = 0x2C
    case event = 0x2D
    case wait = 0x2E
    case waitReply = 0x2F
    case error = 0x30
    case runs = 0x31          // 1.2
    case runsReply = 0x32     // 1.2
    case logs = 0x33          // 1.5
    case logsReply = 0x34     // 1.5
    case story = 0x35         // 1.5
    case storyReply = 0x36    // 1.5
    // Hot standby (1.9, §5.29): coordinator ↔ coordinator, and PROMOTE from an admin.
    case follow = 0x37
    case journal = 0x38
    case snapshot = 0x39
    case replicaAck = 0x3A
    case promote = 0x3B
    case ha = 0x40            // 1.9 (§5.28)
    case haReply = 0x41       // 1.9

    /// Spec name (docs/PROTOCOL.md), used in error texts.
    public var description: String {
        switch self {
        case .hello: "HELLO"
        case .welcome: "WELCOME"
        case .reject: "REJECT"
        case .credit: "CREDIT"
        case .dispatch: "DISPATCH"
        case .started: "STARTED"
        case .progress: "PROGRESS"
        case .finished: "FINISHED"
        case .cancel: "CANCEL"
        case .heartbeat: "HEARTBEAT"
        case .disconnect: "DISCONNECT"
        case .submit: "SUBMIT"
        case .submitReply: "SUBMIT-REPLY"
        case .cancelOps: "CANCEL-OPS"
        case .queue: "QUEUE"
        case .setPriority: "SET-PRIORITY"
        case .ack: "ACK"
        case .status: "STATUS"
        case .statusReply: "STATUS-REPLY"
        case .why: "WHY"
        case .whyReply: "WHY-REPLY"
        case .workers: "WORKERS"
        case .workersReply: "WORKERS-REPLY"
        case .watch: "WATCH"
        case .event: "EVENT"
        case .wait: "WAIT"
        case .waitReply: "WAIT-REPLY"
        case .error: "ERROR"
        case .runs: "RUNS"
        case .runsReply: "RUNS-REPLY"
        case .logs: "LOGS"
        case .logsReply: "LOGS-REPLY"
        case .story: "STORY"
        case .storyReply: "STORY-REPLY"
        case .ha: "HA"
        case .haReply: "HA-REPLY"
        case .follow: "FOLLOW"
        case .journal: "JOURNAL"
        case .snapshot: "SNAPSHOT"
        case .replicaAck: "REPLICA-ACK"
        case .promote: "PROMOTE"
        }
    }
}
