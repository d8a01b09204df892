import ArgumentParser
import Foundation
import OpClient
import WireProtocol

/// `opctl ha status|step-down|promote|standbys` (issue 29): a coordinator group's leadership (PROTOCOL.md
/// §14) and its hot standbys (§5.29, HighAvailability.swift).
struct HA: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ha",
        abstract: "High availability: leadership of coordinators run with --ha (status, step-down) and hot standbys (promote, standbys).",
        subcommands: [HAStatus.self, HAStepDown.self, HAPromote.self, HAStandbys.self])
}

struct HAStatus: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Ask every coordinator given (--coordinator or $OPCOORD: tcp://a:7600,tcp://b:7600) its role, the leader, the epoch, how long the leader serves without a renewal, and the standbys following it with their lag.",
        discussion: "Standbys answer too. Exit status 3 when none answered.")
    @OptionGroup var connection: Connection
    @Flag(help: "One JSON object per coordinator, one per line.") var json = false

    func run() throws {
        let endpoints = CoordinatorEndpoints(connection.coordinator ?? CoordinatorConnection.defaultEndpoint).all
        var rows = [["COORDINATOR", "ROLE", "LEADER", "EPOCH", "SERVES FOR", "ELECTIONS WON", "GROUP"]]
        var standbyRows = [["FOLLOWS", "STANDBY", "STATE", "LAG RECORDS", "LAG MS", "ACK P50 / P99 MS"]]
        var answered = 0
        for e in endpoints {
            do {
                let conn = try connection.connect(to: e)
                guard case .haReply(let r) = try conn.request(.ha(WireHighAvailability())) else {
                    throw ClientError.malformedReply(.ha, "not an HA-REPLY")
                }
                answered += 1
                if json {
                    print(WireJSON.text(r))
                    continue
                }
                rows.append(Self.row(e, r))
                standbyRows += r.standbys.map { Self.standbyRow(e, r.replication, $0) }
            } catch let error as ClientError {
                if json { printError("opctl: \(e): \(error)") } else { rows.append([e, "unreachable", "–", "–", "–", "–", "\(error)"]) }
            }
        }
        if !json {
            printTable(rows)
            if standbyRows.count > 1 {
                print()
                printTable(standbyRows)
            }
        }
        if answered == 0 { throw ExitCode(3) }
    }

    /// A standby following `endpoint`'s journal: its lag in records and in the age of its oldest unacknowledged record.
    static func standbyRow(_ endpoint: String, _ replication: String, _ s: WireStandbyInfo) -> [String] {
        [endpoint, s.name, "\(s.state) (\(replication))", "\(s.lagRecords)", String(format: "%.1f", Double(s.lagUs) / 1000),
         String(format: "%.1f / %.1f", Double(s.ackP50Us) / 1000, Double(s.ackP99Us) / 1000)]
    }

    static func row(_ endpoint: String, _ r: WireHighAvailabilityReply) -> [String] {
        guard r.enabled else { return [endpoint, "single (no --ha)", endpoint, "–", "–", "–", "–"] }
        let serves = r.leading ? String(format: "%.2f s", Double(r.servingLeftMs) / 1000) : "–"
        return [endpoint, r.leading ? "leader" : "standby", r.leader.isEmpty ? "none elected" : r.leader,
                r.leaderEpoch == 0 ? "–" : "\(r.leaderEpoch)", serves, "\(r.electionsWon)", r.group]
    }
}

struct HAStepDown: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "step-down",
        abstract: "Make the leader give up leadership (admin): it stops serving at once and revokes its lease; a standby takes over within a poll (about 100 ms).")
    @OptionGroup var connection: Connection

    func run() throws {
        try withCoordinator {
            var endpoints = CoordinatorEndpoints(connection.coordinator ?? CoordinatorConnection.defaultEndpoint)
            // Each coordinator given, then the leader a standby names: at most one more round trip.
            for _ in 0...endpoints.all.count {
                let conn = try connection.connect(to: endpoints.current)
                guard case .haReply(let r) = try conn.request(.ha(WireHighAvailability.with { $0.stepDown = true })) else {
                    throw ClientError.malformedReply(.ha, "not an HA-REPLY")
                }
                guard r.enabled else {
                    printError("opctl: \(endpoints.current) runs without --ha: there is no leadership to give up")
                    throw ExitCode(3)
                }
                if r.steppedDown {
                    print("\(endpoints.current) stepped down (epoch \(r.leaderEpoch)); a standby of group '\(r.group)' takes over")
                    return
                }
                if !endpoints.redirect(to: r.leader.isEmpty ? nil : r.leader), !endpoints.unreachable() { break }
            }
            printError("opctl: no leader found to step down among \(endpoints.all.joined(separator: ","))")
            throw ExitCode(3)
        }
    }
}
