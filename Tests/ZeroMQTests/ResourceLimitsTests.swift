import Glibc
import Testing
import ZeroMQ

@Suite struct ResourceLimitsTests {
    private func limits() -> rlimit {
        var r = rlimit()
        #expect(getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &r) == 0)
        return r
    }

    @Test func raisesSoftFileLimitToHardLimit() throws {
        // Lower the soft limit a little first (unprivileged, reversible), so the raise is really tested.
        var r = limits()
        if r.rlim_max > 1 && r.rlim_cur == r.rlim_max {
            r.rlim_cur = r.rlim_max - 1
            #expect(setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &r) == 0)
            #expect(limits().rlim_cur < limits().rlim_max)
        }
        let raised = try FileDescriptorLimit.raiseSoftToHard()
        let after = limits()
        #expect(after.rlim_cur == after.rlim_max)
        #expect(raised.soft == UInt64(after.rlim_cur))
        #expect(raised.hard == UInt64(after.rlim_max))
        // Already at the hard limit: a no-op that still succeeds.
        #expect(try FileDescriptorLimit.raiseSoftToHard() == raised)
    }
}
