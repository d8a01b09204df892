import Foundation
import ZeroMQ

/// The CURVE keys a client or worker connects with (PROTOCOL.md §12): its own secret key file and the
/// coordinator's public key, from flags or `$OPQ_KEY` / `$OPQ_COORDINATOR_KEY`. Neither given: no
/// keys (a loopback or `--insecure` coordinator). One without the other is a mistake, said as such.
public enum ClientKeys {
    public static func resolve(key: String?, coordinatorKey: String?,
                               environment: [String: String] = ProcessInfo.processInfo.environment) throws(ClientKeysError) -> CurveClientKeys? {
        func given(_ flag: String?, _ variable: String) -> String? {
            if let flag, !flag.isEmpty { return flag }
            return environment[variable].flatMap { $0.isEmpty ? nil : $0 }
        }
        let secret = given(key, "OPQ_KEY"), server = given(coordinatorKey, "OPQ_COORDINATOR_KEY")
        switch (secret, server) {
        case (nil, nil): return nil
        case (_?, nil):
            throw ClientKeysError("a key was given (--key or $OPQ_KEY) without the coordinator's public key: pass --coordinator-key KEY-OR-.pub-FILE (or $OPQ_COORDINATOR_KEY) so the coordinator is verified, not trusted on first use")
        case (nil, _?):
            throw ClientKeysError("the coordinator's public key was given without a key of your own: pass --key PATH (or $OPQ_KEY); make one with 'opctl keys new PATH'")
        case (let s?, let c?):
            do throws(KeyFileError) {
                return CurveClientKeys(keys: try KeyFile.loadSecret(s), server: try KeyFile.loadPublic(c))
            } catch {
                throw ClientKeysError("\(error)")
            }
        }
    }
}

public struct ClientKeysError: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
