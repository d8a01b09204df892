import CZeroMQ
import Glibc

/// The process's open-file limit (RLIMIT_NOFILE): every TCP connection libzmq holds is a descriptor,
/// so a coordinator with 1,000 workers needs more than the usual soft limit of 1,024.
public enum FileDescriptorLimit {
    /// The current soft and hard limits.
    public static func current() throws -> (soft: UInt64, hard: UInt64) {
        var r = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &r) == 0 else { throw failure("getrlimit(RLIMIT_NOFILE)") }
        return (UInt64(r.rlim_cur), UInt64(r.rlim_max))
    }

    /// Raises the soft limit to the hard limit (an unprivileged process may) and returns the limits
    /// afterwards. Throws if either call fails; the limits are then unchanged.
    @discardableResult
    public static func raiseSoftToHard() throws -> (soft: UInt64, hard: UInt64) {
        var r = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &r) == 0 else { throw failure("getrlimit(RLIMIT_NOFILE)") }
        if r.rlim_cur != r.rlim_max {
            r.rlim_cur = r.rlim_max
            guard setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &r) == 0 else {
                throw failure("setrlimit(RLIMIT_NOFILE, \(r.rlim_max))")
            }
        }
        return try current()
    }

    private static func failure(_ operation: String) -> ZMQError {
        let e = czmq_errno()
        return ZMQError(errno: e, message: String(cString: strerror(e)), operation: operation)
    }
}
