import WireProtocol

/// The `# HELP` text of every family /metrics serves (docs/METRICS.md's tables, shortened).
/// swift-metrics' factory registers families without help, so `MetricsExport` writes these lines
/// itself, one before each `# TYPE` line; a family missing here fails HTTPSideTests.
enum MetricHelp {
    /// What `opqueue_build_info` reports. There is no release number elsewhere in the tree yet: bump
    /// this with a release.
    static let version = "0.1.0-dev"
    static let protocolVersion = String(WireVersion.current)

    static let text: [String: String] = [
        "opqueue_operations": "Retained operations by queue and state (finished ones leave with their run's eviction).",
        "opqueue_operations_submitted_total": "Operations accepted.",
        "opqueue_operations_finished_total": "Operations finished, by outcome.",
        "opqueue_dispatches_total": "Parts sent to workers (every attempt counts).",
        "opqueue_starts_total": "Parts whose handler started.",
        "opqueue_retries_total": "Failed or timed-out attempts that run again.",
        "opqueue_requeues_total": "Parts taken back from a lost or unresponsive worker and dispatched again.",
        "opqueue_timeouts_total": "Attempts stopped by their timeout.",
        "opqueue_queue_wait_seconds": "First attempts: ready (or submitted) to dispatched.",
        "opqueue_dependency_hop_seconds": "Ops with dependencies, first attempt: last dependency finished to handler started.",
        "opqueue_cancel_latency_seconds": "Running ops: cancel requested to the worker reporting it stopped.",
        "opqueue_latency_samples_dropped_total": "Latency samples not recorded (over 100,000 in one second); the histograms then undercount.",
        "opqueue_queue_suspended": "1 while the queue is suspended.",
        "opqueue_share_running": "Dispatched or executing operations of a share key (the 20 busiest per queue; the rest as share=\"other\").",
        "opqueue_share_ready": "Ready operations of a share key (the 20 busiest per queue; the rest as share=\"other\").",
        "opqueue_share_dispatched_total": "New operations dispatched from a share key (the 20 busiest per queue; the rest as share=\"other\").",
        "opqueue_concurrency_key_holding": "Operations of a concurrency key dispatched or executing (the 20 busiest per queue; the rest as key=\"other\").",
        "opqueue_queue_max_concurrent": "The queue's concurrency limit; -1 = unlimited.",
        "opqueue_workers_connected": "Workers registered now.",
        "opqueue_worker_slots": "Slots the worker declared.",
        "opqueue_worker_slots_running": "Parts whose handler runs now on the worker.",
        "opqueue_worker_slots_free": "Slots minus running.",
        "opqueue_worker_in_flight": "Parts the worker holds (running and prefetched).",
        "opqueue_worker_last_seen_seconds": "Seconds since the coordinator last heard from the worker.",
        "opqueue_workers_joined_total": "Worker registrations (a reconnect counts again).",
        "opqueue_workers_lost_total": "Worker sessions lost (silent, left, replaced, revoked).",
        "opqueue_heartbeat_timeouts_total": "Worker sessions lost because they missed their heartbeats.",
        "opqueue_fenced_reports_total": "Worker reports ignored as stale (an old attempt, a lost session).",
        "opqueue_worker_claims_refused_total": "Attempts a re-registering worker claimed that it may not claim.",
        "opqueue_runs_retained": "Runs held now.",
        "opqueue_ha_leader": "1 while this coordinator serves (with --ha: leads its group), else 0.",
        "opqueue_ha_epoch": "With --ha: the epoch of the leader this coordinator knows (its own while it leads); 0 without.",
        "opqueue_ha_elections_won_total": "With --ha: elections this process won.",
        "opqueue_runs_evicted_total": "Runs evicted by retention.",
        "opqueue_loop_longest_pass_seconds": "Longest the loop went without reading its socket in the last publish window (budget 20 ms).",
        "opqueue_loop_passes_over_budget_total": "Loop holds longer than the 20 ms budget.",
        "opqueue_auth_failures_total": "Handshakes and requests refused for their key.",
        "opqueue_replication_sync_fallbacks_total": "Times sync replication stopped waiting for standbys that did not acknowledge in time.",
        "opqueue_standby": "1 while this coordinator is a hot standby (follows a leader, serves nothing).",
        "opqueue_standbys": "Standbys following this coordinator's journal.",
        "opqueue_standbys_in_sync": "Standbys that acknowledgements wait for (sync mode, caught up).",
        "opqueue_standby_lag_records": "The largest number of records durable here that a standby has not acknowledged as durable.",
        "opqueue_standby_lag_seconds": "The longest a standby's oldest unacknowledged record has waited.",
        "opqueue_journal_sync_seconds": "Each group commit's write and fdatasync.",
        "opqueue_build_info": "Always 1; the labels say the opqueue version and the wire protocol version.",
        "process_resident_memory_bytes": "The coordinator's resident set size in bytes.",
        "process_cpu_seconds_total": "The coordinator's user and system CPU time in seconds.",
        "process_start_time_seconds": "When the coordinator process started, in seconds since the Unix epoch.",
    ]

    /// `exposition` with a `# HELP` line before each `# TYPE` line whose family has a text.
    static func annotate(_ exposition: String) -> String {
        var out = ""
        out.reserveCapacity(exposition.utf8.count + text.count * 80)
        for line in exposition.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("# TYPE ") {
                let name = line.dropFirst(7).prefix { $0 != " " }
                if let help = text[String(name)] { out += "# HELP \(name) \(help)\n" }
            }
            out += line
            out += "\n"
        }
        if out.hasSuffix("\n\n") { out.removeLast() }
        return out
    }
}
