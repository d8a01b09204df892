import Journal

/// What the loop keeps for the hot standby (issue 29): as a leader, its standbys and the sync point;
/// as a standby, its link to the leader. Held by `CoordinatorLoop.replication`, touched only on the
/// loop thread.
final class ReplicationState {
    var followers = FollowerBook()
    var sync = SyncPoint(records: 0, sequence: 0)
    /// Per standby: its reader of the segment files (catch-up) and the snapshot being sent.
    var readers: [UInt64: JournalTailReader] = [:]
    var snapshots: [UInt64: SnapshotFile] = [:]
    /// Times the leader stopped waiting for standbys in sync mode (metrics).
    var syncFallbacks: UInt64 = 0
    /// The last pass stopped at `fileBytesPerPass` with more to read for a standby.
    var filesPending = false
    /// Set while this coordinator is a standby.
    var standby: StandbyLink?

    /// The largest piece of journal or snapshot in one message.
    static let pieceBytes = 1 << 20
    /// At most this much is read from segment and snapshot files per loop pass, for all standbys behind
    /// the feed together (a copy out of the page cache: well under a millisecond; from a cold disk more).
    static let fileBytesPerPass = 2 << 20
}
