#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Key files (docs/DEPLOY.md "Keys"): the secret key at PATH (mode 0600: the 40-character Z85 secret on
/// one line, `#` comment lines allowed), the public key at PATH.pub (the 40-character Z85 key on one line,
/// ready to paste into an allow file). Loading refuses what ssh refuses: a missing file, a secret key
/// readable by others, a file that holds no key — each with what to do about it. The same reader guards
/// every file that grants access (`ProtectedFile`): secret keys and the HTTP token must be private, the
/// allow file must not be writable by anyone but its owner.
public enum KeyFile {
    /// Writes a new key pair to `path` and `path.pub`; refuses to overwrite either.
    @discardableResult
    public static func create(at path: String) throws(KeyFileError) -> CurveKeyPair {
        let pair: CurveKeyPair
        do { pair = try CurveKeyPair.generate() } catch { throw .unusable(path, "libzmq cannot make CURVE keys: \(error)") }
        let secret = "# opqueue CURVE secret key: keep it private (mode 0600); its public key is in \(basename(path)).pub\n"
            + Z85.encode(pair.secretKey) + "\n"
        try store(secret, at: path, mode: 0o600)
        do {
            try store(Z85.encode(pair.publicKey) + "\n", at: path + ".pub", mode: 0o644)
        } catch {
            unlink(path)
            throw error
        }
        return pair
    }

    /// The key pair whose secret half is in `path`.
    public static func loadSecret(_ path: String) throws(KeyFileError) -> CurveKeyPair {
        // `opctl keys new` writes NAME and NAME.pub: the .pub one is public (mode 644), never the secret.
        if path.hasSuffix(".pub") { throw .publicKeyGiven(path) }
        guard let line = keyLine(try contents(of: path, as: .secretKey)) else { throw .malformed(path, "no key in it") }
        do { return try CurveKeyPair(secretZ85: line) } catch { throw .malformed(path, "\(error)") }
    }

    /// A secret token (the HTTP side's): the first non-comment line of a private file (mode 0600, like a
    /// secret key), at least 16 characters.
    public static func loadToken(_ path: String) throws(KeyFileError) -> String {
        guard let line = keyLine(try contents(of: path, as: .token)) else { throw .noToken(path, length: 0) }
        guard line.utf8.count >= 16 else { throw .noToken(path, length: line.utf8.count) }
        return line
    }

    /// The text of a file that grants access, if its permissions protect it: a regular file that only
    /// its owner may write (an allow file), and for secrets (a key, a token) only its owner may read
    /// (mode 0600 or stricter); else the error says what to fix.
    public static func contents(of path: String, as kind: ProtectedFile) throws(KeyFileError) -> String {
        var st = stat()
        guard stat(path, &st) == 0 else {
            if errno == ENOENT { throw kind == .secretKey ? .missing(path) : .unusable(path, "it does not exist", kind: kind) }
            throw .unusable(path, String(cString: strerror(errno)), kind: kind)
        }
        guard (st.st_mode & S_IFMT) == S_IFREG else { throw .unusable(path, "not a regular file", kind: kind) }
        let mode = st.st_mode & 0o777
        if mode & kind.forbiddenModeBits != 0 { throw .loosePermissions(path, mode: UInt32(mode), kind: kind) }
        return try contents(of: path, limit: kind.maxBytes, kind: kind)
    }

    /// A public key given as its 40 Z85 characters, or as the path of a file holding them (a `.pub`).
    public static func loadPublic(_ keyOrPath: String) throws(KeyFileError) -> CurvePublicKey {
        let given = trimmed(keyOrPath)
        var st = stat()
        // Z85 has '/' and '.' in it, so a key can look like a path: a file that exists wins.
        guard stat(given, &st) == 0 else {
            if given.utf8.count == 40, let key = try? CurvePublicKey(z85: given) { return key }
            throw .malformed(given, "neither a public key (40 Z85 characters) nor a readable file holding one")
        }
        guard let line = keyLine(try contents(of: given, limit: ProtectedFile.secretKey.maxBytes, kind: .publicKey)) else {
            throw .malformed(given, "no key in it")
        }
        do { return try CurvePublicKey(z85: line) } catch { throw .malformed(given, "\(error)") }
    }

    /// The first line that is not blank or a `#` comment.
    static func keyLine(_ text: String) -> String? {
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            let t = trimmed(String(line))
            if !t.isEmpty, !t.hasPrefix("#") { return t }
        }
        return nil
    }

    private static func contents(of path: String, limit: Int, kind: ProtectedFile) throws(KeyFileError) -> String {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .unusable(path, String(cString: strerror(errno)), kind: kind) }
        defer { close(fd) }
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= limit {
            let n = read(fd, &buffer, buffer.count)
            if n < 0, errno == EINTR { continue }
            guard n >= 0 else { throw .unusable(path, String(cString: strerror(errno)), kind: kind) }
            if n == 0 { return String(decoding: bytes, as: UTF8.self) }
            bytes += buffer[0..<n]
        }
        throw .unusable(path, "larger than \(kind.noun) can be (\(limit >> 10) KiB)", kind: kind)
    }

    private static func store(_ text: String, at path: String, mode: mode_t) throws(KeyFileError) {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard fd >= 0 else {
            if errno == EEXIST { throw .exists(path) }
            throw .unusable(path, String(cString: strerror(errno)))
        }
        defer { close(fd) }
        fchmod(fd, mode)   // the umask must not loosen (or tighten) what was asked for
        let bytes = Array(text.utf8)
        var done = 0
        while done < bytes.count {
            let n = bytes[done...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { unlink(path); throw .unusable(path, String(cString: strerror(errno))) }
            done += n
        }
        guard fsync(fd) == 0 else { unlink(path); throw .unusable(path, String(cString: strerror(errno))) }
    }

    private static func basename(_ path: String) -> String {
        path.split(separator: "/").last.map(String.init) ?? path
    }
}

/// Why a key file cannot be used, with what to do about it.
public enum KeyFileError: Error, Sendable, Equatable, CustomStringConvertible {
    case missing(String)
    case loosePermissions(String, mode: UInt32, kind: ProtectedFile = .secretKey)
    case malformed(String, String)
    case exists(String)
    case unusable(String, String, kind: ProtectedFile = .secretKey)
    /// A `.pub` file given where the secret key is wanted.
    case publicKeyGiven(String)
    /// A token file whose first line is missing or shorter than 16 characters (`length`).
    case noToken(String, length: Int)

    public var description: String {
        switch self {
        case .missing(let p):
            "key file '\(p)' does not exist: create a key pair with 'opctl keys new \(p)'"
        case .loosePermissions(let p, let mode, let kind):
            "permissions \(String(mode, radix: 8)) for \(kind.noun) '\(p)' are too open: \(kind.rule) (\(kind.fix) '\(p)')"
        case .malformed(let p, let why):
            "'\(p)' does not hold a CURVE key (\(why)); key files are made by 'opctl keys new PATH'"
        case .exists(let p):
            "'\(p)' already exists: remove it first or choose another path (an existing key is never overwritten)"
        case .unusable(let p, let why, let kind):
            "cannot use \(kind.noun) '\(p)': \(why)"
        case .publicKeyGiven(let p):
            "'\(p)' is a public key: give the secret key, the file without .pub ('\(p.dropLast(4))')"
        case .noToken(let p, let length):
            length == 0
                ? "token file '\(p)' holds no token: put one line of at least 16 characters in it (e.g. openssl rand -hex 32 > '\(p)')"
                : "token file '\(p)' holds a token of \(length) characters: a token needs at least 16 (e.g. openssl rand -hex 32 > '\(p)')"
        }
    }
}

/// A file that grants access, and what protects it from other local users.
public enum ProtectedFile: Sendable, Equatable {
    /// A CURVE secret key: nobody else may read or write it.
    case secretKey
    /// The HTTP side's bearer token: nobody else may read or write it.
    case token
    /// The allow file (public keys and roles): anyone may read it, only its owner may change it, since
    /// whoever can write it can add an admin key.
    case allowFile
    /// A public key (`.pub`): no rule, read only.
    case publicKey

    var noun: String {
        switch self {
        case .secretKey: "key file"
        case .token: "token file"
        case .allowFile: "allow file"
        case .publicKey: "public key file"
        }
    }

    var forbiddenModeBits: mode_t {
        switch self {
        case .secretKey, .token: 0o077
        case .allowFile: 0o022
        case .publicKey: 0
        }
    }

    var rule: String {
        switch self {
        case .secretKey: "a secret key must be readable by its owner only"
        case .token: "a token must be readable by its owner only"
        case .allowFile: "anyone who can write an allow file can add a key with any role, so only its owner may write it"
        case .publicKey: ""
        }
    }

    var fix: String { self == .allowFile ? "chmod go-w" : "chmod 600" }

    /// Larger than this is not such a file (an allow file may list many thousands of keys).
    var maxBytes: Int { self == .allowFile ? 16 << 20 : 64 << 10 }
}
