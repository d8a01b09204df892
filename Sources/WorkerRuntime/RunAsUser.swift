import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The account `shell` children run as (opworker --run-as): the child gets its uid, primary gid
/// and supplementary groups (swift-subprocess's `PlatformOptions`, applied between fork and exec:
/// setgroups, setgid, setuid), and its `HOME`, `USER`, `LOGNAME`.
public struct RunAsUser: Sendable, Equatable {
    public var name: String
    public var uid: uid_t
    public var gid: gid_t
    /// Supplementary groups, as initgroups(3) would set them (the primary group included).
    public var groups: [gid_t]
    public var home: String

    public init(name: String, uid: uid_t, gid: gid_t, groups: [gid_t], home: String) {
        self.name = name
        self.uid = uid
        self.gid = gid
        self.groups = groups
        self.home = home
    }

    /// Looks `name` up in the user database and checks that this process can switch to it.
    /// - Parameter euid: this process's effective uid (a parameter for tests).
    public static func resolve(_ name: String, euid: uid_t = geteuid()) throws -> RunAsUser {
        let user = try lookup(name)
        if euid != 0 && euid != user.uid {
            throw LimitsError("--run-as \(name): only a worker running as root can run commands as another user "
                              + "(this one runs as uid \(euid)); start it as root, or drop --run-as")
        }
        return user
    }

    /// The passwd entry and group list of `name`.
    public static func lookup(_ name: String) throws -> RunAsUser {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var buffer = [CChar](repeating: 0, count: 16 * 1024)
        let status = getpwnam_r(name, &entry, &buffer, buffer.count, &found)
        guard status == 0, found != nil else {
            let why = status == 0 ? "no such user" : String(cString: strerror(status))
            throw LimitsError("--run-as \(name): \(why)")
        }
        let home = String(cString: entry.pw_dir)
        var count: Int32 = 64
        var groups = [gid_t](repeating: 0, count: Int(count))
        while getgrouplist(name, entry.pw_gid, &groups, &count) < 0 {
            groups = [gid_t](repeating: 0, count: Int(count) + 64)
            count = Int32(groups.count)
        }
        return RunAsUser(name: name, uid: entry.pw_uid, gid: entry.pw_gid, groups: Array(groups.prefix(Int(count))),
                         home: home.isEmpty ? "/" : home)
    }
}

/// A limit of `opworker` that cannot be set up as asked (a bad `--run-as`, `--shell-allow`).
public struct LimitsError: Error, CustomStringConvertible, Equatable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
