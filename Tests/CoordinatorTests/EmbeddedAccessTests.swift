@testable import Coordinator
import ClusterTestSupport
import Foundation
import Testing
import WireProtocol

/// Keys and roles (PROTOCOL.md §12) on the embedded coordinator: every message is authorized against its
/// sender's key after names are resolved, as the loop does, and a refusal changes nothing. Keys are
/// public keys as an allow file lists them; the harness gives each peer its key as the ZAP handler
/// would (its User-Id), without CURVE itself (covered by the process tests: CurveIntegrationTests).
struct EmbeddedAccessTests {
    static let adminKey = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
    static let teamAKey = "Yne@$w-vo<fVvi]a<NY6T1ed:M$fCG*[IaLV{hID"
    static let teamBKey = "E1%kR.o@n%FcmmsL/@{H8]yf7rq:rM>}U?@Lns47"
    static let workerKey = "<fVvi]a<NY6T1ed:M$fCG*[IaLV{hIDYne@$w-vo"
    static let allow = """
        \(adminKey) ops admin
        \(teamAKey) team-a submit team-a/*
        \(teamBKey) team-b submit team-b/*
        \(workerKey) w worker
        """
    let admin = Array("admin".utf8), teamA = Array("team-a".utf8), teamB = Array("team-b".utf8)

    func coordinator() -> EmbeddedCoordinator {
        var c = EmbeddedCoordinator(allow: Self.allow)
        c.use(key: Self.adminKey, for: admin)
        c.use(key: Self.teamAKey, for: teamA)
        c.use(key: Self.teamBKey, for: teamB)
        return c
    }

    func unauthorized(_ reply: Message?, sourceLocation: SourceLocation = #_sourceLocation) -> String? {
        guard case .error(let e)? = reply, e.code == .unauthorized else {
            Issue.record("expected ERROR unauthorized, got \(String(describing: reply))", sourceLocation: sourceLocation)
            return nil
        }
        return e.message
    }

    func state(_ c: inout EmbeddedCoordinator, _ id: String, run: String) -> WireOpState? {
        c.status([id], run: run, from: admin)?.ops.first?.state
    }

    /// A team key cancels its own work, and not another team's, whether it names the op in the other
    /// team's run or the run as a whole. The op is resolved in the run the request names before the check:
    /// resolved without it, the bare id "x" would be team-a's own (the latest run's), and the core would
    /// then cancel team-b's op in "rb".
    @Test func aTeamKeyCannotCancelAnotherTeamsOperationThroughItsRun() throws {
        var c = coordinator()
        #expect(c.submit([op("x", queue: "team-b/etl")], run: "rb", from: teamB)?.accepted == true)
        #expect(c.submit([op("x", queue: "team-a/etl")], run: "ra", from: teamA)?.accepted == true)
        let byOp = unauthorized(c.request(.cancelOps(.with { $0.opIds = ["x"]; $0.run = "rb" }), from: teamA))
        #expect(byOp?.contains("operation 'x' is in queue 'team-b/etl'") == true, "\(byOp ?? "")")
        let byRun = unauthorized(c.request(.cancelOps(.with { $0.run = "rb" }), from: teamA))
        #expect(byRun?.contains("run 'rb' has operations in queue 'team-b/etl'") == true, "\(byRun ?? "")")
        let qualified = unauthorized(c.request(.cancelOps(.with { $0.opIds = ["rb/x"]; $0.run = "ra" }), from: teamA))
        #expect(qualified?.contains("team-b/etl") == true, "a RUN/OP name in the team's own run context: \(qualified ?? "")")
        #expect(state(&c, "x", run: "rb") == .ready, "refused: nothing changed")
        guard case .ack? = c.request(.cancelOps(.with { $0.opIds = ["x"]; $0.run = "ra" }), from: teamA) else {
            Issue.record("a team key could not cancel its own operation"); return
        }
        #expect(state(&c, "x", run: "ra") == .finished)
        #expect(state(&c, "x", run: "rb") == .ready)
    }

    /// A worker's key reports on work; it does not submit, cancel or change priorities, and a submit key
    /// does not report results.
    @Test func aWorkerKeyCannotSubmitAndASubmitKeyCannotReport() throws {
        var c = coordinator()
        let forger = Array("forger".utf8)
        c.use(key: Self.workerKey, for: forger)
        let submit = unauthorized(c.request(.submit(.with { $0.operations = [op("z", queue: "team-a/etl")]; $0.run = "rz" }), from: forger))
        #expect(submit?.contains("may not submit") == true)
        #expect(c.status(["z"], run: "rz", from: admin)?.ops.isEmpty != false, "nothing was submitted")
        // A team key, not a worker's, sends FINISHED for a team-b op as if it had run it.
        #expect(c.submit([op("x", queue: "team-b/etl")], run: "rb", from: teamB)?.accepted == true)
        c.send(.finished(.with { f in
            f.records = [.with { $0.opID = "rb/x"; $0.attempt = 1; $0.succeeded = Data("forged".utf8) }]
            f.credit = 1
        }), from: teamA)
        let report = unauthorized(c.take(teamA).first?.message)
        #expect(report?.contains("may not report on work") == true)
        #expect(state(&c, "x", run: "rb") == .ready, "the forged result was not taken")
    }

    /// A worker with a worker key reports only on what it was sent: a FINISHED for an attempt dispatched
    /// to another worker is not taken (the claim is checked like a request, on the resolved part).
    @Test func aWorkerKeyCannotFinishWorkSentToAnotherWorker() throws {
        var c = coordinator()
        let one = ScriptedWorker("one"), two = ScriptedWorker("two")
        c.use(key: Self.workerKey, for: one.routing)
        c.use(key: Self.workerKey, for: two.routing)
        c.connect(one)
        #expect(c.submit([op("x", queue: "team-b/etl")], run: "rb", from: teamB)?.accepted == true)
        let sent = c.dispatched(to: one)
        #expect(sent.map(\.opID) == ["rb/x"])
        c.connect(two, credit: 0)
        c.succeed(sent, on: two, result: "forged")
        #expect(state(&c, "x", run: "rb") == .dispatched, "another worker's report was not taken")
        c.succeed(sent, on: one, result: "real")
        guard let done = c.status(["x"], run: "rb", from: admin)?.ops.first else { Issue.record("no status"); return }
        #expect(done.state == .finished && done.outcome.succeeded == Data("real".utf8))
    }
}
