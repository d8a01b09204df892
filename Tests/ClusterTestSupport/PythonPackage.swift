import Foundation

/// The `opqueue` Python package (python/) as the tests run it: the interpreter of the venv that
/// scripts/setup makes (`.venv-python`, the package installed in it), or $OPQ_PYTHON.
public enum PythonPackage {
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    public static var python: String {
        if let p = ProcessInfo.processInfo.environment["OPQ_PYTHON"], !p.isEmpty { return p }
        return root.appendingPathComponent(".venv-python/bin/python").path
    }

    /// What to do when `python` is missing (a thrown error fails the test: it never skips).
    public static let install = "run scripts/setup: it makes .venv-python with the opqueue package (pip install ./python)"

    /// python/examples/`name`.
    public static func example(_ name: String) -> String { root.appendingPathComponent("python/examples/\(name)").path }

    public static func requireInterpreter() throws {
        guard FileManager.default.isExecutableFile(atPath: python) else { throw ClusterError("\(python) not found: \(install)") }
    }
}
