import ArgumentParser
import Foundation
import WireProtocol

/// `opctl ha promote|standbys` (issue 29): the hot standby; `HA` (HACommand.swift) lists them.
struct HAPromote: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "promote",
        abstract: "Turn the standby at --coordinator into the serving coordinator now (manual failover; needs the 'admin' role). Its state is current: no recovery; workers re-register with what they hold.")
    @OptionGroup var connection: Connection

    func run() throws { try sendAck(connection, .promote, done: "promoted: \(connection.coordinator ?? "the coordinator") serves now") }
}

struct HAStandbys: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "standbys",
        abstract: "The standbys following the coordinator at --coordinator, their state and lag.")
    @OptionGroup var connection: Connection
    @Flag(help: "Print machine-readable JSON.") var json = false

    func run() throws {
        let conn = try withCoordinator { try connection.connect() }
        var s = WireStatus()
        s.queue = ""
        let reply = try withCoordinator { try conn.request(.status(s)) }
        guard case .statusReply(let r) = reply else { throw ExitCode(3) }
        if json {
            var only = WireStatusReply()
            only.standbys = r.standbys
            only.replication = r.replication
            print(Message.statusReply(only).jsonBody)
            return
        }
        guard !r.standbys.isEmpty else {
            print("no standby follows \(connection.coordinator ?? "the coordinator")")
            return
        }
        print("replication: \(r.replication)")
        for sb in r.standbys {
            print("\(sb.name)  \(sb.state)  durable record \(sb.durableRecord)  lag \(sb.lagRecords) records, \(sb.lagUs / 1000) ms  ack p50 \(sb.ackP50Us / 1000) ms p99 \(sb.ackP99Us / 1000) ms")
        }
    }
}
