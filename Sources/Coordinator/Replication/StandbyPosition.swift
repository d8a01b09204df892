/// Where a standby is in its leader's journal (issue 29): a pure value the standby's link feeds with
/// what arrives and asks what to do with it. Records must arrive in order from its own position; a
/// snapshot's pieces in order from offset 0; anything else (a restarted leader, a lost message) makes it
/// ask again from where it is (FOLLOW), never apply out of order.
struct StandbyPosition {
    enum Decision: Equatable {
        /// Apply these records (the first `skip` of the message are ones it holds already).
        case apply(skip: Int)
        /// Nothing new in it.
        case ignore
        /// Out of order: ask for the stream again from `position`.
        case refollow
        /// The snapshot is complete: install it (the bytes are `snapshotBytes`), then go on at `recordsAfter`.
        case install(number: Int, recordsAfter: UInt64)
        /// A piece of a snapshot was kept; more to come.
        case collecting
    }

    /// The next record it needs: everything before it is applied to its core and appended to its journal.
    private(set) var position: UInt64
    /// JOURNAL and SNAPSHOT messages received in the current stream (acknowledged for flow control).
    private(set) var received: UInt64 = 0
    /// A snapshot being received: its number, position after it, and the bytes so far.
    private(set) var snapshot: (number: Int, recordsAfter: UInt64, total: Int)?
    private(set) var snapshotBytes: [UInt8] = []

    init(position: UInt64) { self.position = position }

    /// A new stream was asked for (FOLLOW sent): counting starts again.
    mutating func followed() {
        received = 0
        snapshot = nil
        snapshotBytes = []
    }

    mutating func journal(first: UInt64, records: Int) -> Decision {
        received += 1
        guard snapshot == nil else { return .refollow }
        let end = first + UInt64(records)
        if first > position { return .refollow }
        if end <= position { return .ignore }
        let skip = Int(position - first)
        position = end
        return .apply(skip: skip)
    }

    mutating func snapshotPiece(number: Int, recordsAfter: UInt64, offset: Int, total: Int, data: [UInt8]) -> Decision {
        received += 1
        if offset == 0 {
            snapshot = (number, recordsAfter, total)
            snapshotBytes = []
            snapshotBytes.reserveCapacity(total)
        }
        guard let s = snapshot, s.number == number, s.recordsAfter == recordsAfter, s.total == total,
              offset == snapshotBytes.count else {
            snapshot = nil
            snapshotBytes = []
            return .refollow
        }
        snapshotBytes.append(contentsOf: data)
        guard snapshotBytes.count >= total else { return .collecting }
        return .install(number: number, recordsAfter: recordsAfter)
    }

    /// The snapshot was installed: its bytes are let go, the position is after it.
    mutating func installed(recordsAfter: UInt64) {
        snapshot = nil
        snapshotBytes = []
        position = recordsAfter
    }
}
