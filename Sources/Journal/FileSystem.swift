import Glibc

// The few POSIX calls the journal makes, with errno turned into `JournalError.io` naming the path.

enum FileSystem {
    /// `mkdir -p` with mode 0700 for what it creates (the state holds every payload and result).
    static func makeDirectory(_ path: String) throws(JournalError) {
        var st = stat()
        if stat(path, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFDIR else { throw .io(path: path, operation: "use as a directory", errno: ENOTDIR) }
            return
        }
        let parent = parentDirectory(of: path)
        if parent != path && parent != "." && parent != "/" { try makeDirectory(parent) }
        if mkdir(path, 0o700) != 0 && errno != EEXIST { throw .io(path: path, operation: "create directory", errno: errno) }
        syncDirectory(parent)  // best effort: the directory entry itself
    }

    static func open(_ path: String, _ flags: Int32, operation: String = "open") throws(JournalError) -> Int32 {
        let fd = Glibc.open(path, flags | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .io(path: path, operation: operation, errno: errno) }
        return fd
    }

    /// Writes all of `bytes` at `offset` (looping over short writes and EINTR); 0 or the errno.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int32 {
        var done = 0
        while done < bytes.count {
            let n = pwrite(fd, bytes.baseAddress! + done, bytes.count - done, off_t(offset + done))
            if n < 0 {
                if errno == EINTR { continue }
                return errno
            }
            if n == 0 { return EIO }
            done += n
        }
        return 0
    }

    /// fsync of a directory, so that file creations, renames and deletions in it are durable.
    @discardableResult
    static func syncDirectory(_ path: String) -> Int32 {
        let fd = Glibc.open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { return errno }
        defer { close(fd) }
        return fsync(fd) == 0 ? 0 : errno
    }

    static func list(_ path: String) throws(JournalError) -> [String] {
        guard let dir = opendir(path) else { throw .io(path: path, operation: "list directory", errno: errno) }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    static func size(_ path: String) -> Int? {
        var st = stat()
        return stat(path, &st) == 0 ? Int(st.st_size) : nil
    }

    static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    /// Shortens `path` to `length` bytes and makes that durable.
    static func truncate(_ path: String, to length: Int) throws(JournalError) {
        let fd = try open(path, O_WRONLY)
        defer { close(fd) }
        guard ftruncate(fd, off_t(length)) == 0 else { throw .io(path: path, operation: "truncate", errno: errno) }
        guard fsync(fd) == 0 else { throw .io(path: path, operation: "fsync", errno: errno) }
    }

    static func rename(_ from: String, _ to: String) throws(JournalError) {
        guard Glibc.rename(from, to) == 0 else { throw .io(path: from, operation: "rename to \(to)", errno: errno) }
    }

    static func copy(_ from: String, _ to: String) throws(JournalError) {
        let file = try MappedFile(from)
        let fd = try open(to, O_WRONLY | O_CREAT | O_EXCL, operation: "create")
        defer { close(fd) }
        let e = file.bytes.isEmpty ? 0 : writeAll(fd, file.bytes, at: 0)
        guard e == 0 else { throw .io(path: to, operation: "write", errno: e) }
        guard fsync(fd) == 0 else { throw .io(path: to, operation: "fsync", errno: errno) }
    }
}

/// A whole file mapped read-only (recovery reads every byte once; no copy into the heap).
final class MappedFile {
    let path: String
    let bytes: UnsafeRawBufferPointer

    init(_ path: String) throws(JournalError) {
        self.path = path
        let fd = try FileSystem.open(path, O_RDONLY)
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0 else { throw .io(path: path, operation: "stat", errno: errno) }
        let size = Int(st.st_size)
        guard size > 0 else {
            bytes = UnsafeRawBufferPointer(start: nil, count: 0)
            return
        }
        let p = mmap(nil, size, PROT_READ, MAP_PRIVATE, fd, 0)
        guard let p, p != MAP_FAILED else { throw .io(path: path, operation: "map", errno: errno) }
        madvise(p, size, MADV_SEQUENTIAL)
        bytes = UnsafeRawBufferPointer(start: p, count: size)
    }

    deinit {
        if let base = bytes.baseAddress { munmap(UnsafeMutableRawPointer(mutating: base), bytes.count) }
    }
}
