/// Every protocol message, with its typed body (the generated protobuf structs).
/// `command` gives the header code; docs/PROTOCOL.md describes each one.
public enum Message: Sendable, Equatable {
    // Worker conversation.
    case hello(WireHello)                 // W → C
    case welcome(WireWelcome)             // C → W
    case reject(WireReject)               // C → W
    case credit(WireCredit)               // W → C
    case dispatch(WireDispatch)           // C → W
    case started(WireStarted)             // W → C
    case progress(WireProgress)           // W → C
    case finished(WireFinished)           // W → C
    case cancel(WireCancel)               // C → W
    case heartbeat                        // both ways (worker, watching client)
    case disconnect(WireDisconnect)       // both ways
    // Client conversation (requests carry a request id in the header).
    case submit(WireSubmit)               // Cl → C
    case submitReply(WireSubmitReply)     // C → Cl
    case cancelOps(WireCancelOps)         // Cl → C
    case queue(WireQueueControl)          // Cl → C
    case setPriority(WireSetPriority)     // Cl → C
    case ack(WireAck)                     // C → Cl (CANCEL-OPS, QUEUE, SET-PRIORITY, WATCH)
    case status(WireStatus)               // Cl → C
    case statusReply(WireStatusReply)     // C → Cl
    case why(WireWhy)                     // Cl → C
    case whyReply(WireWhyReply)           // C → Cl
    case workers                          // Cl → C
    case workersReply(WireWorkersReply)   // C → Cl
    case watch(WireWatch)                 // Cl → C
    case event(WireEvents)                // C → Cl, request id of the WATCH
    case wait(WireWait)                   // Cl → C
    case waitReply(WireWaitReply)         // C → Cl
    case error(WireErrorReply)            // C → any
    case runs(WireRuns)                   // Cl → C (1.2)
    case runsReply(WireRunsReply)         // C → Cl (1.2)
    case logs(WireLogs)                   // Cl → C (1.5)
    case logsReply(WireLogsReply)         // C → Cl (1.5)
    case story(WireStory)                 // Cl → C (1.5)
    case storyReply(WireStoryReply)       // C → Cl (1.5)
    case ha(WireHighAvailability)         // Cl → C (1.9)
    case haReply(WireHighAvailabilityReply) // C → Cl (1.9)
    // Hot standby (1.9): S = a standby coordinator, L = the leader it follows.
    case follow(WireFollow)               // S → L
    case journal(WireJournalChunk)        // L → S
    case snapshot(WireSnapshotChunk)      // L → S
    case replicaAck(WireReplicaAck)       // S → L
    case promote                          // Cl (admin) → S; ACK

    public var command: Command {
        switch self {
        case .hello: .hello
        case .welcome: .welcome
        case .reject: .reject
        case .credit: .credit
        case .dispatch: .dispatch
        case .started: .started
        case .progress: .progress
        case .finished: .finished
        case .cancel: .cancel
        case .heartbeat: .heartbeat
        case .disconnect: .disconnect
        case .submit: .submit
        case .submitReply: .submitReply
        case .cancelOps: .cancelOps
        case .queue: .queue
        case .setPriority: .setPriority
        case .ack: .ack
        case .status: .status
        case .statusReply: .statusReply
        case .why: .why
        case .whyReply: .whyReply
        case .workers: .workers
        case .workersReply: .workersReply
        case .watch: .watch
        case .event: .event
        case .wait: .wait
        case .waitReply: .waitReply
        case .error: .error
        case .runs: .runs
        case .runsReply: .runsReply
        case .logs: .logs
        case .logsReply: .logsReply
        case .story: .story
        case .storyReply: .storyReply
        case .ha: .ha
        case .haReply: .haReply
        case .follow: .follow
        case .journal: .journal
        case .snapshot: .snapshot
        case .replicaAck: .replicaAck
        case .promote: .promote
        }
    }
}

/// A decoded message with the request id from its header (0 when not a request or reply).
public struct Envelope: Sendable, Equatable {
    public var requestID: UInt32
    public var message: Message

    public init(requestID: UInt32 = 0, _ message: Message) {
        self.requestID = requestID
        self.message = message
    }
}

/// The fixed 8-byte header frame: "OQ", version, command code, request id (big-endian).
public struct Header: Sendable, Equatable {
    public var version: UInt8
    /// Raw command byte; `Command(rawValue:)` is nil for unknown codes.
    public var commandCode: UInt8
    public var requestID: UInt32

    public init(version: UInt8 = WireVersion.current, command: Command, requestID: UInt32 = 0) {
        self.version = version
        self.commandCode = command.rawValue
        self.requestID = requestID
    }

    public var command: Command? { Command(rawValue: commandCode) }

    public var bytes: [UInt8] {
        [WireVersion.signature.0, WireVersion.signature.1, version, commandCode,
         UInt8(truncatingIfNeeded: requestID >> 24), UInt8(truncatingIfNeeded: requestID >> 16),
         UInt8(truncatingIfNeeded: requestID >> 8), UInt8(truncatingIfNeeded: requestID)]
    }
}
