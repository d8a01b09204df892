import ArgumentParser
import Foundation
import OpClient
import OpSpec
import WireProtocol

struct Share: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Set a queue's fair share, concurrency-key limit, rates and ageing (admin).",
        discussion: """
            Only the options given change; the others keep the queue's current values (the request carries \
            just what is given, and the coordinator applies it to the settings it holds). --weight adds or \
            changes one share key's weight (a key not named weighs 1); --reset-weights drops the others first. \
            `opctl status` shows the result.
            """)
    @OptionGroup var connection: Connection
    @Argument(help: "Queue name.") var queue: String
    @Option(help: "Share mode: submitter (the default), run, key (the op's own share), or fifo (no sharing).") var mode: String?
    @Option(name: .customLong("weight"), help: "KEY=N: a share key's weight, 1...1000 (repeatable).") var weights: [String] = []
    @Flag(name: .customLong("reset-weights"), help: "Drop the weights not given with --weight.") var resetWeights = false
    @Option(name: .customLong("key-limit"), help: "Most ops of one concurrency key at once; 0 = no limit.") var keyLimit: Int?
    @Option(name: .customLong("key-strategy"), help: "wait, cancel-newest or cancel-in-progress.") var keyStrategy: String?
    @Option(help: "Dispatches of new ops at most this fast: 100/s, 30/m, 500/h.") var rate: String?
    @Option(help: "Tokens saved up for a burst, 1...1000000 (with --rate, or changing the current rate's).") var burst: Int?
    @Flag(name: .customLong("no-rate"), help: "Remove the queue's rate limit.") var noRate = false
    @Option(name: .customLong("key-rate"), help: "Each concurrency key starts new ops at most this fast: 10/s, 30/m, 500/h.") var keyRate: String?
    @Option(name: .customLong("key-burst"), help: "Tokens each key saves up, 1...1000000 (with --key-rate, or changing the current one's).") var keyBurst: Int?
    @Flag(name: .customLong("no-key-rate"), help: "Remove the per-key rate limit.") var noKeyRate = false
    @Option(help: "Raise a ready op one priority level each time it waits this long: 500ms, 30s, 5m, 1h (1ms...24h).") var ageing: String?
    @Flag(name: .customLong("no-ageing"), help: "Turn ageing off (strict priorities, the default).") var noAgeing = false

    func validate() throws { _ = try request() }

    /// What the options ask for, as the wire's fairness message (absent fields: unchanged).
    func request() throws -> WireQueueFairness {
        var f = WireQueueFairness()
        if let mode {
            guard let m = QueueFairness.ShareMode(rawValue: mode) else {
                throw ValidationError("unknown --mode '\(mode)'; use submitter, run, key or fifo")
            }
            f.share = m.wire
        }
        for w in weights {
            let parts = w.split(separator: "=", maxSplits: 1).map(String.init)
            guard parts.count == 2, !parts[0].isEmpty, let n = Int(parts[1]) else {
                throw ValidationError("--weight takes KEY=N (e.g. team-a=3), got '\(w)'")
            }
            guard n >= 1 && n <= QueueFairness.maxWeight else {
                throw ValidationError("--weight \(parts[0]): the weight must be 1...\(QueueFairness.maxWeight), got \(n)")
            }
            var sw = WireShareWeight()
            sw.share = parts[0]
            sw.weight = UInt32(n)
            f.weights.append(sw)
        }
        f.replaceWeights = resetWeights
        if let keyLimit {
            guard keyLimit >= 0 && keyLimit <= Int(Int32.max) else { throw ValidationError("--key-limit must be 0 (no limit) or more, got \(keyLimit)") }
            f.keyLimit = UInt32(keyLimit)
        }
        if let keyStrategy {
            guard let s = QueueFairness.KeyStrategy(rawValue: keyStrategy) else {
                throw ValidationError("unknown --key-strategy '\(keyStrategy)'; use wait, cancel-newest or cancel-in-progress")
            }
            f.keyStrategy = s.wire
        }
        if noRate && (rate != nil || burst != nil) { throw ValidationError("--no-rate removes the rate limit: give no --rate or --burst with it") }
        if noRate { f.noRate = true }
        if let rate {
            switch RateText.perSecond(rate) {
            case .success(let r): f.ratePerSecond = r
            case .failure(let message): throw ValidationError("--rate: \(message)")
            }
        }
        if let burst {
            guard burst >= 1 && burst <= 1_000_000 else { throw ValidationError("--burst must be 1...1000000, got \(burst)") }
            f.burst = UInt32(burst)
        }
        if noKeyRate && (keyRate != nil || keyBurst != nil) {
            throw ValidationError("--no-key-rate removes the per-key rate: give no --key-rate or --key-burst with it")
        }
        if noKeyRate { f.noKeyRate = true }
        if let keyRate {
            switch RateText.perSecond(keyRate) {
            case .success(let r): f.keyRatePerSecond = r
            case .failure(let message): throw ValidationError("--key-rate: \(message)")
            }
        }
        if let keyBurst {
            guard keyBurst >= 1 && keyBurst <= 1_000_000 else { throw ValidationError("--key-burst must be 1...1000000, got \(keyBurst)") }
            f.keyBurst = UInt32(keyBurst)
        }
        if noAgeing && ageing != nil { throw ValidationError("--no-ageing turns ageing off: give no --ageing with it") }
        if noAgeing { f.noAgeing = true }
        if let ageing {
            switch AgeingText.micros(ageing) {
            case .success(let a): f.ageingUs = UInt64(a)
            case .failure(let message): throw ValidationError("--ageing: \(message)")
            }
        }
        guard f != WireQueueFairness() else {
            throw ValidationError("nothing to change: give --mode, --weight, --reset-weights, --key-limit, --key-strategy, --rate, --burst, --no-rate, --key-rate, --key-burst, --no-key-rate, --ageing or --no-ageing")
        }
        return f
    }

    func run() throws {
        var q = WireQueueControl()
        q.settings.name = queue
        q.settings.fairness = try request()
        try sendAck(connection, .queue(q), done: "queue \(queue) fair share set")
    }
}

/// The fair-share settings of a STATUS queue record in one line ("share key; weights a=3; key limit 2 (wait); rate 50/s, burst 10;
/// ageing 30s").
func fairnessText(_ q: WireQueueCounts) -> String {
    let f = q.hasFairness ? q.fairness : WireQueueFairness(QueueFairness.default)
    var parts = ["share \(QueueFairness.ShareMode(wire: f.share)?.rawValue ?? "submitter")"]
    if !f.weights.isEmpty { parts.append("weights " + f.weights.map { "\($0.share)=\($0.weight)" }.joined(separator: ",")) }
    if f.keyLimit > 0 {
        parts.append("key limit \(f.keyLimit) (\(QueueFairness.KeyStrategy(wire: f.keyStrategy)?.rawValue ?? "wait"))")
    }
    if f.hasRatePerSecond { parts.append("rate \(RateText.text(f.ratePerSecond)), burst \(f.burst)") }
    if f.hasKeyRatePerSecond { parts.append("key rate \(RateText.text(f.keyRatePerSecond)), key burst \(f.keyBurst)") }
    if f.hasAgeingUs { parts.append("ageing \(AgeingText.text(Int64(clamping: f.ageingUs)))") }
    return parts.joined(separator: "; ")
}

/// Whether `opctl status` shows a queue's shares and keys: more than one share key, or any key or rate limit, or ageing.
func showsFairness(_ q: WireQueueCounts) -> Bool {
    q.shares.count + Int(q.sharesOmitted) > 1 || !q.keys.isEmpty
        || (q.hasFairness && (q.fairness.keyLimit > 0 || q.fairness.hasRatePerSecond || q.fairness.hasKeyRatePerSecond
            || q.fairness.hasAgeingUs))
}

/// Under the queue table: each such queue's settings, its shares (running/ready/dispatched) and keys (holding/waiting).
func printFairness(_ queues: [WireQueueCounts], now: Int64) {
    for q in queues where showsFairness(q) {
        var head = "queue \(q.name): \(fairnessText(q))"
        if q.nextTokenUs > 0 { head += "; next token in \((max(0, q.nextTokenUs - now) + 999) / 1000) ms" }
        print("")
        print(head)
        if !q.shares.isEmpty {
            var rows = [["  SHARE", "WEIGHT", "RUNNING", "READY", "DISPATCHED"]]
            for s in q.shares { rows.append(["  " + s.name, "\(s.weight)", "\(s.running)", "\(s.ready)", "\(s.dispatchedTotal)"]) }
            printTable(rows)
            if q.sharesOmitted > 0 { print("  … and \(q.sharesOmitted) more share keys") }
        }
        if !q.keys.isEmpty {
            var rows = [["  KEY", "HOLDING", "WAITING"]]
            for k in q.keys { rows.append(["  " + k.name, "\(k.holding)", "\(k.waiting)"]) }
            printTable(rows)
            if q.keysOmitted > 0 { print("  … and \(q.keysOmitted) more concurrency keys") }
        }
    }
}

/// The fair-share part of a queue's JSON (status --json).
func fairnessJSON(_ q: WireQueueCounts) -> [String: Any] {
    let f = q.hasFairness ? q.fairness : WireQueueFairness(QueueFairness.default)
    var d: [String: Any] = [
        "share": QueueFairness.ShareMode(wire: f.share)?.rawValue ?? "submitter",
        "weights": Dictionary(f.weights.map { ($0.share, Int($0.weight)) }, uniquingKeysWith: { $1 }),
        "key_limit": Int(f.keyLimit),
        "key_strategy": QueueFairness.KeyStrategy(wire: f.keyStrategy)?.rawValue ?? "wait",
        "shares": q.shares.map { ["name": $0.name, "weight": Int($0.weight), "running": $0.running, "ready": $0.ready,
                                  "dispatched_total": $0.dispatchedTotal] as [String: Any] },
        "keys": q.keys.map { ["name": $0.name, "holding": $0.holding, "waiting": $0.waiting] as [String: Any] },
    ]
    if f.hasRatePerSecond { d["rate_per_second"] = f.ratePerSecond; d["burst"] = Int(f.burst) }
    if f.hasKeyRatePerSecond { d["key_rate_per_second"] = f.keyRatePerSecond; d["key_burst"] = Int(f.keyBurst) }
    if f.hasAgeingUs { d["ageing_us"] = Int(clamping: f.ageingUs) }
    if q.sharesOmitted > 0 { d["shares_omitted"] = Int(q.sharesOmitted) }
    if q.keysOmitted > 0 { d["keys_omitted"] = Int(q.keysOmitted) }
    return d
}
