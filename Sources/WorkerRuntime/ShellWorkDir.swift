import Foundation
import OpSpec

/// The per-run temporary directory of a `shell` part: `inputs/` holds one file per dependency
/// result. Removed when the run ends.
struct ShellWorkDir {
    let path: String
    var inputsDir: String { path + "/inputs" }

    static func create(root: String, key: PartKey) throws -> ShellWorkDir {
        let stem = "opq-\(sanitizedFileName(key.opID).prefix(40))-\(key.part)-\(key.attempt)-XXXXXX"
        var template = Array((root.hasSuffix("/") ? root : root + "/").utf8CString.dropLast()) + Array(stem.utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else {
            throw HandlerError("cannot create a temporary directory under \(root): \(String(cString: strerror(errno)))")
        }
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let dir = ShellWorkDir(path: path)
        guard mkdir(dir.inputsDir, 0o700) == 0 else {
            throw HandlerError("cannot create \(dir.inputsDir): \(String(cString: strerror(errno)))")
        }
        return dir
    }

    /// Writes each input to `inputs/<id>` and returns the environment that names them:
    /// `OPQ_INPUT_<ID>` per dependency (id upper-cased, other characters `_`; a clash gets
    /// `_2`, `_3`… in `after` order).
    func writeInputs(_ inputs: [DispatchedPart.Input]) throws -> [String: String] {
        var environment: [String: String] = [:]
        var usedFiles = Set<String>()
        for input in inputs {
            var file = Self.sanitizedFileName(input.id)
            var variable = "OPQ_INPUT_" + Self.sanitizedVariable(input.id)
            var suffix = 2
            while usedFiles.contains(file) || environment[variable] != nil {
                file = Self.sanitizedFileName(input.id) + "_\(suffix)"
                variable = "OPQ_INPUT_" + Self.sanitizedVariable(input.id) + "_\(suffix)"
                suffix += 1
            }
            usedFiles.insert(file)
            let filePath = inputsDir + "/" + file
            guard FileManager.default.createFile(atPath: filePath, contents: Data(input.result)) else {
                throw HandlerError("cannot write input \"\(input.id)\" to \(filePath)")
            }
            environment[variable] = filePath
        }
        return environment
    }

    /// Hands the directory and the input files to `user`, whom the child runs as (the worker, root,
    /// made them; mode 0700 keeps other users out).
    func give(to user: RunAsUser) throws {
        let files = (try? FileManager.default.contentsOfDirectory(atPath: inputsDir)) ?? []
        for item in [path, inputsDir] + files.map({ inputsDir + "/" + $0 }) where chown(item, user.uid, user.gid) != 0 {
            throw HandlerError("cannot hand \(item) to user \(user.name): \(String(cString: strerror(errno)))")
        }
    }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }

    /// Letters, digits, `.`, `-`, `_` kept; anything else `_`; never empty, `.` or `..`.
    static func sanitizedFileName(_ id: String) -> String {
        let kept = String(id.unicodeScalars.map { scalar -> Character in
            scalar.isASCII && (scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) || "._-".unicodeScalars.contains(scalar))
                ? Character(scalar) : "_"
        })
        return kept.isEmpty || kept == "." || kept == ".." ? "_" + kept : kept
    }

    /// Upper-case ASCII letters, digits and `_`.
    static func sanitizedVariable(_ id: String) -> String {
        let kept = String(id.uppercased().unicodeScalars.map { scalar -> Character in
            scalar.isASCII && (("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)) ? Character(scalar) : "_"
        })
        return kept.isEmpty ? "_" : kept
    }
}
