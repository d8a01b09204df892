import CZeroMQ

/// The libzmq version linked at run time, e.g. (4, 3, 4).
public func libzmqVersion() -> (major: Int, minor: Int, patch: Int) {
    var major: Int32 = 0, minor: Int32 = 0, patch: Int32 = 0
    zmq_version(&major, &minor, &patch)
    return (Int(major), Int(minor), Int(patch))
}

/// Whether libzmq supports `capability` ("curve", "ipc", "draft", …) — e.g. check "curve" before CURVE options.
public func libzmqHas(_ capability: String) -> Bool { zmq_has(capability) != 0 }
