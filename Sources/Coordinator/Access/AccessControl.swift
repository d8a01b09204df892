import Foundation
import Logging
import Synchronization
import ZeroMQ

/// The coordinator's key pair and allow file, shared by the ZAP thread (who may connect at all) and the
/// loop (what each request may do). The allow file is re-read on SIGHUP (`reload`) and when it changes
/// on disk (`reloadIfChanged`, polled by the ZAP thread); a file that no longer parses keeps the previous
/// list and says why in the log. The loop copies the list when `generation` moves (one atomic load per
/// pass), so its hot path takes no lock.
public final class AccessControl: Sendable {
    public let keys: CurveKeyPair
    public let allowPath: String
    private let logger: Logger
    private let state: Mutex<State>
    /// Bumped on every successful reload.
    let generation = Atomic<UInt64>(1)
    /// Handshakes refused (unknown or revoked keys, wrong mechanism), for status and metrics.
    public let authFailures = Atomic<UInt64>(0)

    private struct State {
        var list: AllowList
        var fileStamp: FileStamp?
        var limiter = LogLimiter()
    }

    /// What identifies one version of the file on disk. The mode is part of it: a file refused for its
    /// permissions is read again once they are fixed (`chmod go-w`), without a SIGHUP.
    struct FileStamp: Equatable {
        var inode: UInt64, size: Int64, mtimeNanos: Int64, mode: UInt32
        static func of(_ path: String) -> FileStamp? {
            var st = stat()
            guard stat(path, &st) == 0 else { return nil }
            return FileStamp(inode: UInt64(st.st_ino), size: Int64(st.st_size),
                             mtimeNanos: Int64(st.st_mtim.tv_sec) * 1_000_000_000 + Int64(st.st_mtim.tv_nsec),
                             mode: UInt32(st.st_mode))
        }
    }

    /// Loads the allow file; a missing or malformed one stops the start.
    public init(keys: CurveKeyPair, allowPath: String, logger: Logger) throws(AllowListError) {
        self.keys = keys
        self.allowPath = allowPath
        self.logger = logger
        let stamp = FileStamp.of(allowPath)
        let list = try AllowList.load(allowPath)
        state = Mutex(State(list: list, fileStamp: stamp))
        logger.info("CURVE on: \(list.count) key(s) allowed by \(allowPath); coordinator public key \(Z85.encode(keys.publicKey))")
    }

    /// The current list and its generation.
    func current() -> (list: AllowList, generation: UInt64) {
        state.withLock { s in (s.list, generation.load(ordering: .acquiring)) }
    }

    /// The ZAP decision for a CURVE client key: its User-Id (the key itself, looked up again by the loop
    /// on every message so a revoked key stops at once), or nil to refuse the handshake.
    func admit(key: String, address: String) -> Bool {
        let known = state.withLock { $0.list.principal(key: key) != nil }
        if !known { refused("unknown key \(key.prefix(8))… from \(address)", key: "key \(key) \(address)") }
        return known
    }

    /// Counts and logs a refused peer (rate-limited per key and address).
    func refused(_ what: String, key: String) {
        authFailures.add(1, ordering: .relaxed)
        let now = CoordinatorClock.nowMicros()
        if let held = state.withLock({ $0.limiter.admit(key, now: now) }) {
            logger.warning("authentication failed: \(what)\(held > 0 ? " (\(held) more since the last such line)" : "")")
        }
    }

    /// Re-reads the allow file now (SIGHUP).
    public func reload() { reload(stamp: FileStamp.of(allowPath), why: "SIGHUP") }

    /// Re-reads the allow file if it changed on disk since the last read; true if it was re-read.
    @discardableResult
    func reloadIfChanged() -> Bool {
        let stamp = FileStamp.of(allowPath)
        guard stamp != state.withLock({ $0.fileStamp }) else { return false }
        reload(stamp: stamp, why: "the file changed")
        return true
    }

    private func reload(stamp: FileStamp?, why: String) {
        do {
            let list = try AllowList.load(allowPath)
            let before = state.withLock { s in
                defer { s.list = list; s.fileStamp = stamp }
                return s.list
            }
            generation.add(1, ordering: .releasing)
            let revoked = before.byKey.keys.filter { list.principal(key: $0) == nil }.count
            logger.notice("allow file reloaded (\(why)): \(list.count) key(s), \(revoked) revoked")
        } catch {
            state.withLock { $0.fileStamp = stamp }   // do not retry the same broken version every poll
            logger.error("allow file not reloaded (\(why)), keeping the previous \(state.withLock { $0.list.count }) key(s): \(error)")
        }
    }
}
