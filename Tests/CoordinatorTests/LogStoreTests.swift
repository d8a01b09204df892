@testable import Coordinator
import Foundation
import Testing

/// The coordinator's bounded store of attempts' output (LOGS): a plain value.
struct LogStoreTests {
    func entry(_ attempt: Int, part: Int = 0, out: Int = 0, err: Int = 0, outcome: String = "failed") -> LogStore.Entry {
        LogStore.Entry(attempt: attempt, part: part, worker: "w1", outcome: outcome,
                       stdout: Data(repeating: 111, count: out), stderr: Data(repeating: 101, count: err), finishedAt: Int64(attempt))
    }

    @Test func keepsEveryAttemptOldestFirstAndOneWhenAsked() {
        var s = LogStore(capacity: 1 << 20)
        do { let added = s.add(op: "r/a", entry(2, out: 5, outcome: "succeeded")); #expect(added) }
        do { let added = s.add(op: "r/a", entry(1, out: 3, err: 4)); #expect(added) }
        do { let added = s.add(op: "r/b", entry(1, err: 2)); #expect(added) }
        let all = s.logs(op: "r/a")
        #expect(all.entries.map(\.attempt) == [1, 2])
        #expect(all.entries[0].stderr.count == 4 && all.entries[1].outcome == "succeeded")
        #expect(!all.evicted)
        #expect(s.logs(op: "r/a", attempt: 2).entries.map(\.stdout.count) == [5])
        #expect(s.logs(op: "r/a", attempt: 3).entries.isEmpty)
        #expect(s.logs(op: "r/zz").entries.isEmpty && !s.logs(op: "r/zz").evicted)
        #expect(s.count == 3)
    }

    @Test func countsEveryByteAndGivesThemBackOnEviction() {
        var s = LogStore(capacity: 1 << 20)
        let a = entry(1, out: 100, err: 50), b = entry(1, out: 7)
        s.add(op: "r/a", a)
        s.add(op: "r/bb", b)
        let cost = LogStore.cost(op: "r/a", a) + LogStore.cost(op: "r/bb", b)
        #expect(s.bytes == cost)
        #expect(LogStore.cost(op: "r/a", a) == LogStore.entryOverhead + 3 + 2 + 6 + 150)
        // A repeated FINISHED of the same attempt and part is not kept twice.
        do { let added = s.add(op: "r/a", a); #expect(!added) }
        #expect(s.bytes == cost && s.count == 2)
        // A second part of the same attempt is its own entry.
        do { let added = s.add(op: "r/a", entry(1, part: 1, out: 1)); #expect(added) }
        #expect(s.logs(op: "r/a").entries.map(\.part) == [0, 1])
    }

    @Test func evictsTheOldestAttemptsFirstAndSaysSo() {
        let one = LogStore.cost(op: "r/a", entry(1, out: 1000))
        var s = LogStore(capacity: 3 * one)
        s.add(op: "r/a", entry(1, out: 1000))
        s.add(op: "r/b", entry(1, out: 1000))
        s.add(op: "r/a", entry(2, out: 1000))
        #expect(s.bytes == 3 * one && s.evictedEntries == 0)
        // A fourth pushes out the oldest: r/a's attempt 1.
        s.add(op: "r/b", entry(2, out: 1000))
        #expect(s.bytes == 3 * one && s.count == 3 && s.evictedEntries == 1)
        #expect(s.logs(op: "r/a").entries.map(\.attempt) == [2])
        #expect(s.logs(op: "r/a").evicted)
        #expect(!s.logs(op: "r/b").evicted)
        // Then r/b's attempt 1, then r/a's last one: r/a is remembered as evicted though nothing is left.
        s.add(op: "r/c", entry(1, out: 1000))
        s.add(op: "r/c", entry(2, out: 1000))
        #expect(s.logs(op: "r/b").entries.map(\.attempt) == [2] && s.logs(op: "r/b").evicted)
        #expect(s.logs(op: "r/a").entries.isEmpty && s.logs(op: "r/a").evicted)
        #expect(s.evictedEntries == 3 && s.bytes <= s.capacity)
    }

    @Test func aBigEntryEvictsSeveralAndOneOverTheCapacityIsNotKept() {
        let small = LogStore.cost(op: "r/a", entry(1, out: 10))
        var s = LogStore(capacity: 10 * small)
        for i in 1...10 { s.add(op: "r/a", entry(i, out: 10)) }
        #expect(s.count == 10)
        s.add(op: "r/big", entry(1, out: 5 * small))   // needs 6 small ones' room
        #expect(s.count == 4 + 1 && s.logs(op: "r/a").entries.map(\.attempt) == [7, 8, 9, 10])
        #expect(s.bytes <= s.capacity)
        do { let added = s.add(op: "r/huge", entry(1, out: 11 * small)); #expect(!added) }
        #expect(s.logs(op: "r/huge").evicted && s.count == 5)
    }

    @Test func aStoreOfCapacityZeroKeepsNothing() {
        var s = LogStore(capacity: 0)
        do { let added = s.add(op: "r/a", entry(1, out: 1)); #expect(!added) }
        #expect(s.bytes == 0 && s.count == 0 && !s.logs(op: "r/a").evicted)
    }

    @Test func manyEvictionsStayConsistent() {
        var s = LogStore(capacity: 50_000)
        var kept: [String: Set<Int>] = [:]
        for i in 0..<5000 {
            let op = "r/op\(i % 37)"
            if s.add(op: op, entry(i, out: i % 300, err: i % 7)) { kept[op, default: []].insert(i) }
        }
        #expect(s.bytes <= s.capacity)
        var total = 0, bytes = 0
        for i in 0..<37 {
            let e = s.logs(op: "r/op\(i)").entries
            total += e.count
            bytes += e.reduce(0) { $0 + LogStore.cost(op: "r/op\(i)", $1) }
            // What is left of each op is its newest attempts.
            if let first = e.first { #expect(Set(e.map(\.attempt)) == kept["r/op\(i)", default: []].filter { $0 >= first.attempt }) }
        }
        #expect(total == s.count && bytes == s.bytes)
        #expect(s.evictedEntries == 5000 - s.count)
    }
}
