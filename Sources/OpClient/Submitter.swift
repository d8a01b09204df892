import Foundation

/// Who submits, as a client without a key says it: "user@host". `opctl runs` shows it, and without keys it
/// is the default share key of fair share (docs/SEMANTICS.md A11); with keys the coordinator uses the key's
/// name instead, whatever the client says.
public enum Submitter {
    /// Read once: the host name lookup is not free, and a client submits often.
    public static let current: String = {
        let user = ProcessInfo.processInfo.environment["USER"] ?? NSUserName()
        return "\(user)@\(ProcessInfo.processInfo.hostName)"
    }()
}
