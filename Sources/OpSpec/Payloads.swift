import Foundation

/// A payload that could not be decoded; `description` says what is wrong.
public struct PayloadError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Payload of the `shell` kind, encoded as JSON:
/// `{"argv": ["tool", "arg"]}` or `{"command": "a | b"}` (run by `/bin/sh -c`),
/// plus optional `"env": {"K": "V"}` (added to the child's scrubbed environment), `"cwd": "/dir"` and
/// `"grace": 2.0` (seconds between SIGTERM and SIGKILL on cancel).
public struct ShellCommand: Sendable, Hashable, Codable {
    public enum Program: Sendable, Hashable {
        /// Executable and arguments; the executable is looked up in `PATH` unless it contains `/`.
        case argv([String])
        /// A command line run by `/bin/sh -c`.
        case script(String)
    }

    public var program: Program
    public var env: [String: String]
    public var cwd: String?
    /// Seconds between SIGTERM and SIGKILL when cancelled; `nil` = the worker's default (2 s).
    public var grace: Double?

    public init(_ program: Program, env: [String: String] = [:], cwd: String? = nil, grace: Double? = nil) {
        self.program = program
        self.env = env
        self.cwd = cwd
        self.grace = grace
    }

    public static func argv(_ argv: [String], env: [String: String] = [:], cwd: String? = nil, grace: Double? = nil) -> ShellCommand {
        ShellCommand(.argv(argv), env: env, cwd: cwd, grace: grace)
    }

    public static func script(_ command: String, env: [String: String] = [:], cwd: String? = nil, grace: Double? = nil) -> ShellCommand {
        ShellCommand(.script(command), env: env, cwd: cwd, grace: grace)
    }

    /// The process to start: `argv`, or `["/bin/sh", "-c", command]`.
    public var commandLine: [String] {
        switch program {
        case .argv(let argv): argv
        case .script(let command): ["/bin/sh", "-c", command]
        }
    }

    private enum CodingKeys: String, CodingKey, CaseIterable { case argv, command, env, cwd, grace }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        let argv = try container.decodeIfPresent([String].self, forKey: .argv)
        let command = try container.decodeIfPresent(String.self, forKey: .command)
        switch (argv, command) {
        case (let argv?, nil):
            guard let first = argv.first, !first.isEmpty else { throw PayloadError("shell payload: argv is empty") }
            program = .argv(argv)
        case (nil, let command?):
            guard !command.isEmpty else { throw PayloadError("shell payload: command is empty") }
            program = .script(command)
        case (.some, .some):
            throw PayloadError("shell payload: give either argv or command, not both")
        case (nil, nil):
            throw PayloadError("shell payload: needs argv (a list) or command (a string)")
        }
        env = try container.decodeIfPresent([String: String].self, forKey: .env) ?? [:]
        cwd = try container.decodeIfPresent(String.self, forKey: .cwd)
        grace = try container.decodeIfPresent(Double.self, forKey: .grace)
        if let grace, !(grace >= 0 && grace.isFinite) { throw PayloadError("shell payload: grace must be ≥ 0 seconds") }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch program {
        case .argv(let argv): try container.encode(argv, forKey: .argv)
        case .script(let command): try container.encode(command, forKey: .command)
        }
        if !env.isEmpty { try container.encode(env, forKey: .env) }
        try container.encodeIfPresent(cwd, forKey: .cwd)
        try container.encodeIfPresent(grace, forKey: .grace)
    }

    /// JSON bytes (keys sorted, so equal commands give equal payloads).
    public func encoded() -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Encoding strings, lists and dictionaries of strings cannot fail.
        return (try? Array(encoder.encode(self))) ?? []
    }

    public static func decode(_ payload: [UInt8]) throws(PayloadError) -> ShellCommand {
        do {
            return try JSONDecoder().decode(ShellCommand.self, from: Data(payload))
        } catch let error as PayloadError {
            throw error
        } catch {
            throw PayloadError("shell payload is not valid JSON of the form {\"argv\": [...]} or {\"command\": \"...\"}: \(PayloadText.describe(error))")
        }
    }
}

/// Payload of the `sleep` and `burn` kinds: milliseconds as a decimal number (`1500`, which is
/// also JSON), or `{"milliseconds": 1500}`.
public struct SleepPayload: Sendable, Hashable {
    public var milliseconds: Int

    public init(milliseconds: Int) { self.milliseconds = milliseconds }

    public func encoded() -> [UInt8] { Array(String(milliseconds).utf8) }

    /// `kind` only names the kind in error messages.
    public static func decode(_ payload: [UInt8], kind: String = "sleep") throws(PayloadError) -> SleepPayload {
        let text = String(decoding: payload, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        if let ms = Int(text) {
            guard ms >= 0 else { throw PayloadError("\(kind) payload: milliseconds must be ≥ 0, got \(ms)") }
            return SleepPayload(milliseconds: ms)
        }
        struct Object: Decodable { var milliseconds: Int }
        if let object = try? JSONDecoder().decode(Object.self, from: Data(text.utf8)) {
            guard object.milliseconds >= 0 else {
                throw PayloadError("\(kind) payload: milliseconds must be ≥ 0, got \(object.milliseconds)")
            }
            return SleepPayload(milliseconds: object.milliseconds)
        }
        throw PayloadError("\(kind) payload must be a whole number of milliseconds (e.g. 1500), got \(PayloadText.preview(payload))")
    }
}

/// Payloads of `echo` (returned as the result) and `fail` (the error text) are raw bytes.
public enum PayloadText {
    public static func bytes(_ text: String) -> [UInt8] { Array(text.utf8) }
    public static func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    /// A short quoted preview of a payload for error messages.
    public static func preview(_ bytes: [UInt8], limit: Int = 40) -> String {
        let text = String(decoding: bytes.prefix(limit), as: UTF8.self)
        return "\"" + text + (bytes.count > limit ? "…" : "") + "\""
    }

    static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.typeMismatch(let type, let context):
            "\(path(context)) should be \(type)"
        case DecodingError.keyNotFound(let key, _):
            "missing \(key.stringValue)"
        case DecodingError.valueNotFound(let type, let context):
            "\(path(context)) should be \(type)"
        case DecodingError.dataCorrupted(let context):
            context.debugDescription
        default:
            String(describing: error)
        }
    }

    private static func path(_ context: DecodingError.Context) -> String {
        context.codingPath.map(\.stringValue).joined(separator: ".")
    }
}

extension OperationSpec {
    /// A `shell` operation whose payload is the encoded command.
    public static func shell(id: String, _ command: ShellCommand, after: [String] = [],
                             priority: OperationPriority = .normal) -> OperationSpec {
        OperationSpec(id: id, kind: BuiltinKind.shell, payload: command.encoded(), after: after, priority: priority)
    }
}
