import Logging
import ZeroMQ

extension CoordinatorServer {
    /// For opcoord's startup: every connected worker and client holds a descriptor, so a coordinator
    /// with 1,000 workers needs more than the usual soft limit of 1,024. Failing to raise it is not fatal.
    public static func raiseOpenFileLimit(logger: Logger) {
        do {
            let limit = try FileDescriptorLimit.raiseSoftToHard()
            logger.debug("open-file limit: \(limit.soft) (hard \(limit.hard))")
        } catch {
            logger.warning("cannot raise the open-file limit, keeping the current one: \(error)")
        }
    }
}
