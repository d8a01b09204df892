import WorkerRuntime

/// Typed operations' ids carry their kind — `KIND:swift-1a2b3c4d-17` — so a worker, which is handed
/// only the ids and results of the dependencies that succeeded, can tell which one is a `Download`.
/// An operation submitted otherwise (opctl, a graph file) is found by type when its id is the kind or
/// starts with `KIND:`.
enum TypedIDs {
    /// The kind as it appears in an id ('/' separates run and operation in ids, so it becomes '_').
    static func idKind(_ kind: String) -> String {
        kind.utf8.contains(UInt8(ascii: "/")) ? kind.replacingOccurrences(of: "/", with: "_") : kind
    }

    static func generated(kind: String, unique: String) -> String { idKind(kind) + ":" + unique }

    /// Does dependency id `id` ("OP" or "RUN/OP") name an operation of `kind`?
    static func matches(_ id: String, kind: String) -> Bool {
        let bare = id.split(separator: "/", omittingEmptySubsequences: false).last ?? ""
        let k = idKind(kind)
        return bare == k || (bare.hasPrefix(k) && bare.dropFirst(k.count).first == ":" && !bare.dropFirst(k.count + 1).contains(":"))
    }
}

/// Why `OperationContext.output(of:)` has no output to give. Thrown in `main`, it fails the operation
/// with its description, like any other error.
public enum DependencyOutputError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No dependency of this type passed an output: none was declared, or it failed or was cancelled
    /// (a dependency that did not succeed passes none; with `dependencyPolicy: .succeeded` the
    /// operation is cancelled instead of run without it).
    case noDependency(type: String, kind: String, available: [String])
    /// Several dependencies of this type succeeded: ask for one by id.
    case severalDependencies(type: String, ids: [String])
    /// No output from the dependency with this id: it is not a dependency, or it failed or was cancelled.
    case noOutput(id: String, available: [String])
    /// The dependency's output is not a valid `Output` of `type`.
    case undecodable(id: String, type: String, path: String, detail: String)

    public var description: String {
        func list(_ ids: [String]) -> String { ids.isEmpty ? "none" : ids.map { "'\($0)'" }.joined(separator: ", ") }
        switch self {
        case .noDependency(let type, let kind, let available):
            return "no output of a \(type) (kind '\(kind)') among this operation's dependencies that succeeded (\(list(available))): "
                + "it is not a dependency, or it failed or was cancelled (those pass no output)"
        case .severalDependencies(let type, let ids):
            return "several dependencies are a \(type) (\(list(ids))): use output(of: id, as: \(type).self)"
        case .noOutput(let id, let available):
            return "no output of dependency '\(id)' (dependencies that succeeded: \(list(available))): "
                + "it is not a dependency, or it failed or was cancelled (those pass no output)"
        case .undecodable(let id, let type, let path, let detail):
            return "cannot decode the output of dependency '\(id)' as \(type).Output\(path.isEmpty ? "" : " at '\(path)'"): \(detail)"
        }
    }
}

extension OperationContext {
    /// The decoded output of the one dependency of type `Op` that succeeded.
    public func output<Op: DistributedOperation>(of type: Op.Type) throws -> Op.Output {
        let matching = inputList.filter { TypedIDs.matches($0.id, kind: Op.kind) }
        guard let input = matching.first else {
            throw DependencyOutputError.noDependency(type: String(describing: Op.self), kind: Op.kind, available: inputList.map(\.id))
        }
        guard matching.count == 1 else {
            throw DependencyOutputError.severalDependencies(type: String(describing: Op.self), ids: matching.map(\.id))
        }
        return try Self.decode(input, as: type)
    }

    /// The decoded output of dependency `dependency` (its id, as the client's `RemoteOperation.id`).
    public func output<Op: DistributedOperation>(of dependency: String, as type: Op.Type) throws -> Op.Output {
        guard let input = inputList.first(where: { $0.id == dependency }) else {
            throw DependencyOutputError.noOutput(id: dependency, available: inputList.map(\.id))
        }
        return try Self.decode(input, as: type)
    }

    /// Every succeeded dependency of type `Op`, by id, in the operation's dependency order.
    public func outputs<Op: DistributedOperation>(of type: Op.Type) throws -> [(id: String, output: Op.Output)] {
        try inputList.filter { TypedIDs.matches($0.id, kind: Op.kind) }.map { ($0.id, try Self.decode($0, as: type)) }
    }

    private static func decode<Op: DistributedOperation>(_ input: DispatchedPart.Input, as type: Op.Type) throws -> Op.Output {
        do {
            return try Op.decodeOutput(input.result)
        } catch {
            let (path, detail) = TypedCoding.describe(error)
            throw DependencyOutputError.undecodable(id: input.id, type: String(describing: Op.self), path: path, detail: detail)
        }
    }
}
