import Dispatch
import Foundation
import WireProtocol

extension RemoteOperationQueue {
    /// Adds a typed operation with the default configuration; returns its handle (`try await op.value`).
    /// For priority, dependencies, retries…, make a `TypedRemoteOperation` and add that.
    @discardableResult
    public func addOperation<Op: DistributedOperation>(_ input: Op) throws -> TypedRemoteOperation<Op> {
        let op = TypedRemoteOperation(input)
        try addOperation(op)
        return op
    }

    /// `addOperations(_:waitUntilFinished:)` without blocking the caller's thread: the submit runs off
    /// Swift's cooperative pool and the wait suspends. In async code this form is chosen (write `await`).
    public func addOperations(_ ops: [RemoteOperation], waitUntilFinished wait: Bool = false) async throws {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<Void, any Error>) in
            DispatchQueue.global().async {
                do {
                    try self.addOperations(ops, waitUntilFinished: false)
                    c.resume()
                } catch {
                    c.resume(throwing: error)
                }
            }
        }
        if wait { for op in ops { await op.waitUntilFinished() } }
    }

    /// Tells the coordinator's `warningHandler` about typed operations of this batch that no connected
    /// worker can run (SUBMIT's `unplaceable`, as `opctl submit` shows it). Bytes operations keep the
    /// API's earlier behaviour (no warning).
    func warnUnplaceable(_ unplaceable: [WireUnplaceable], _ ops: [RemoteOperation]) {
        var types: [String: String] = [:]
        for op in ops { if let t = op.typeName { types[op.kind] = t } }
        guard !types.isEmpty else { return }
        for u in unplaceable { if let type = types[u.kind] { coordinator.warn(Self.unplaceableText(u, type: type)) } }
    }

    static func unplaceableText(_ u: WireUnplaceable, type: String) -> String {
        let one = u.opCount == 1
        let what = "\(u.opCount) \(type) operation\(one ? "" : "s") (\(u.opIds.prefix(5).joined(separator: ", "))\(u.opCount > 5 ? ", …" : ""))"
        let why: String
        if u.noWorkerKind {
            why = "no connected worker offers kind '\(u.kind)' (start one with OpWorker.main(operations: [\(type).self, …]))"
        } else if !u.missingTags.isEmpty {
            why = "no connected worker with kind '\(u.kind)' has tag\(u.missingTags.count == 1 ? "" : "s") \(u.missingTags.joined(separator: ", "))"
        } else {
            why = "no single connected worker with kind '\(u.kind)' has all of the tags \(u.requires.joined(separator: ", "))"
        }
        return "\(what): \(why); \(one ? "it waits" : "they wait") until such a worker joins"
    }
}
