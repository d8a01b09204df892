#!/usr/bin/env python3
"""Interop check between the `opqueue` package's codec (opqueue.wire) and the Swift codec.

    interop.py emit   prints "NAME HEADER_HEX BODY_HEX" per fixture (Python-encoded)
    interop.py check  reads such lines (Swift-encoded) on stdin, decodes each and
                      compares it field by field with the Python fixture of that name;
                      prints "OK NAME" or "FAIL NAME: why", exits 1 on any failure.

The fixtures repeat, value for value, those of Tests/WireProtocolTests/Fixtures.swift.
"""
import sys

try:
    from opqueue import opqueue_pb2 as pb
    from opqueue.wire import WireError, decode, encode
except ImportError as e:
    print("MISSING %s: run it with the venv scripts/setup makes (.venv-python/bin/python), or "
          "pip install ./python" % e.name, file=sys.stderr)
    sys.exit(3)


def dispatch_record(i):
    return pb.DispatchRecord(
        op_id="op-%d" % i, part=i % 3, attempt=1 + i % 2, kind="echo",
        payload=bytes([i & 0xFF, 1, 2, 3]), priority=4, qos=pb.QOS_UTILITY, name="Op %d" % i,
        inputs=[pb.Input(dependency_id="dep-%d" % i, result=("r%d" % i).encode())])


def finished_record(i):
    r = pb.FinishedRecord(op_id="op-%d" % i, part=0, attempt=1)
    if i % 3 == 0:
        r.succeeded = ("result-%d" % i).encode()
    elif i % 3 == 1:
        r.failed = "boom %d" % i
    else:
        r.cancelled = "timeout"
    return r


def fixtures():
    """[(name, request_id, body)] — the same values as the Swift fixtures."""
    ops_b = pb.Operation(id="b", name="Bee", kind="shell", after=["a"], priority=-4, qos=pb.QOS_BACKGROUND,
                         parts=2, policy=pb.DEPENDENCY_POLICY_SUCCEEDED, retries=1, loss_retries=5,
                         timeout_us=2_500_000, requires=["gpu"], barrier=True)
    return [
        ("HELLO", 0, pb.Hello(protocol_version=1, name="host-a:42", slots=4, tags=["gpu", "ssd"],
                              kinds=["echo", "noop", "shell"])),
        ("WELCOME", 0, pb.Welcome(worker_id="w-1", heartbeat_interval_ms=1000, liveness=3)),
        ("REJECT", 0, pb.Reject(code=pb.ERROR_CODE_UNSUPPORTED_VERSION, reason="protocol_version 2 not supported")),
        ("CREDIT", 0, pb.Credit(credit=8)),
        ("DISPATCH", 0, pb.Dispatch(records=[dispatch_record(i) for i in range(3)])),
        ("STARTED", 0, pb.Started(parts=[pb.PartRef(op_id="op-%d" % i, part=i, attempt=1) for i in range(2)])),
        ("PROGRESS", 0, pb.Progress(records=[
            pb.ProgressRecord(op_id="op-1", attempt=1, fraction=0.5, message="half"),
            pb.ProgressRecord(op_id="op-2", part=1, attempt=2, done=3, total=10)])),
        ("FINISHED", 0, pb.Finished(records=[finished_record(i) for i in range(3)], credit=3)),
        ("CANCEL", 0, pb.Cancel(records=[pb.CancelRecord(op_id="op-7", attempt=2, reason="cancelled by client")])),
        ("HEARTBEAT", 0, pb.Heartbeat()),
        ("DISCONNECT", 0, pb.Disconnect(reason="shutting down")),
        ("SUBMIT", 11, pb.Submit(
            queues=[pb.QueueSettings(name="render", max_concurrent=2, qos=pb.QOS_USER_INITIATED, suspended=False)],
            operations=[pb.Operation(id="a", kind="echo", payload=b"hi", queue="render"), ops_b])),
        ("WAIT", 19, pb.Wait(op_ids=["a", "b"], timeout_us=5_000_000)),
        ("ERROR", 20, pb.ErrorReply(code=pb.ERROR_CODE_NOT_FOUND, message="no operation zz", command=0x28, op_id="zz")),
    ]


def emit():
    for name, rid, body in fixtures():
        header, data = encode(name, body, request_id=rid)
        print(name, header.hex(), data.hex() or "-")


def check():
    expected = {name: (rid, body) for name, rid, body in fixtures()}
    seen, failures = set(), 0
    for line in sys.stdin:
        parts = line.split()
        if not parts:
            continue
        name, header_hex, body_hex = parts
        frames = [bytes.fromhex(header_hex), b"" if body_hex == "-" else bytes.fromhex(body_hex)]
        try:
            got_name, rid, msg = decode(frames)
        except WireError as e:
            print("FAIL %s: %s" % (name, e))
            failures += 1
            continue
        want_rid, want = expected[name]
        problems = []
        if got_name != name:
            problems.append("command %s" % got_name)
        if rid != want_rid:
            problems.append("request id %d != %d" % (rid, want_rid))
        if msg != want:  # protobuf equality: every field, including presence of optionals
            problems.append("fields differ:\n%s---\n%s" % (msg, want))
        if encode(name, want, want_rid)[1] != frames[1]:
            problems.append("Python would encode different bytes")
        seen.add(name)
        if problems:
            failures += 1
            print("FAIL %s: %s" % (name, "; ".join(problems)))
        else:
            print("OK %s" % name)
    for name in set(expected) - seen:
        print("FAIL %s: not received" % name)
        failures += 1
    return 1 if failures else 0


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "emit":
        emit()
    elif mode == "check":
        sys.exit(check())
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
