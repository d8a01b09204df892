import Dispatch
import OpClient
import SwiftProtobuf
import WireProtocol
import ZeroMQ

/// The HTTP side's questions to the coordinator's loop: the same requests opctl sends (STATUS, RUNS,
/// WORKERS, WHY, …), over an in-process connection, answered by the loop between its other messages.
/// One connection, used from one serial queue (a ZeroMQ socket belongs to one thread at a time), so
/// no cooperative-pool thread ever blocks on the loop.
final class CoordinatorReader: @unchecked Sendable {
    // @unchecked: `connection` is only touched on `queue`.
    private let queue = DispatchQueue(label: "opcoord.http.reader")
    private let connection: CoordinatorConnection

    init(endpoint: String, context: Context) throws {
        connection = try CoordinatorConnection(endpoint: endpoint, timeout: .seconds(5), context: context)
        connection.followsRedirects = false   // a standby's page says so (issue 29)
    }

    /// Sends `request` and returns the reply; ERROR replies and timeouts are thrown (`ClientError`).
    func ask(_ request: WireProtocol.Message) async throws -> WireProtocol.Message {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<WireProtocol.Message, any Error>) in
            queue.async { c.resume(with: Result { try self.connection.request(request) }) }
        }
    }

    /// Closes the connection (before the coordinator's ZeroMQ context terminates).
    func close() { queue.sync { connection.close() } }
}

/// JSON answers (docs/HTTP.md "JSON"): protocol replies as `WireJSON` writes them, put together.
enum JSONText {
    static func of(_ m: some SwiftProtobuf.Message) -> String { WireJSON.text(m) }

    /// `{"a": <json>, "b": <json>}` from already-encoded parts.
    static func object(_ parts: [(String, String)]) -> String {
        "{" + parts.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    static func string(_ s: String) -> String {
        var out = "\""
        for u in s.unicodeScalars {
            switch u {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where u.value < 0x20: out += String(format: "\\u%04x", u.value)
            default: out.unicodeScalars.append(u)
            }
        }
        return out + "\""
    }
}
