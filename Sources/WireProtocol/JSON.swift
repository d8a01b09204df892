import SwiftProtobuf

extension Message {
    /// The body in protobuf's JSON mapping with the schema's field names (`snake_case`), as docs/HTTP.md
    /// describes: 64-bit integers as strings, bytes as base64, fields at their default left out. "{}"
    /// for an empty body.
    public var jsonBody: String {
        func json(_ m: some SwiftProtobuf.Message) -> String { WireJSON.text(m) }
        switch self {
        case .logs(let m): return json(m)
        case .logsReply(let m): return json(m)
        case .story(let m): return json(m)
        case .storyReply(let m): return json(m)
        case .ha(let m): return json(m)
        case .haReply(let m): return json(m)
        case .follow(let m): return json(m)
        case .journal(let m): return json(m)
        case .snapshot(let m): return json(m)
        case .replicaAck(let m): return json(m)
        case .promote: return "{}"
        case .status(let m): return json(m)
        case .statusReply(let m): return json(m)
        case .why(let m): return json(m)
        case .whyReply(let m): return json(m)
        case .runs(let m): return json(m)
        case .runsReply(let m): return json(m)
        case .workersReply(let m): return json(m)
        case .error(let m): return json(m)
        default: return json(WireHeartbeat())   // not needed as JSON so far
        }
    }
}

/// One protocol message body in protobuf's JSON mapping with the schema's field names (docs/HTTP.md).
public enum WireJSON {
    static let options: JSONEncodingOptions = {
        var o = JSONEncodingOptions()
        o.preserveProtoFieldNames = true
        return o
    }()

    public static func text(_ m: some SwiftProtobuf.Message) -> String {
        (try? m.jsonString(options: options)) ?? "{}"
    }
}
