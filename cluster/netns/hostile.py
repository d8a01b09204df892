#!/usr/bin/env python3
"""Hostile peers for the soak test (cluster/netns/hostile.sh): for SECONDS (bounded, and every loop
bounded in count) against ENDPOINT, one thread each of
  - garbage: random frames, truncated headers, unknown commands, wrong versions;
  - hello-spam: new connections sending HELLO with the most kinds and tags a HELLO may name, each
    label as long as allowed, then vanishing; plus HELLOs over the limits (must be REJECTed);
  - greedy: a worker that declares 1 slot, grants 1,000,000 credits again and again and never
    starts what it gets (it may hold at most slots + prefetch, and the coordinator takes work back);
  - oversized: requests over the protocol's limits (a body over 16 MiB, a STATUS naming more ids
    than a batch allows).
It prints what it sent and what came back as one JSON line; exit 1 if a check failed (an oversized
HELLO not rejected, or the greedy worker holding more than its slots + prefetch).
Usage: hostile.py ENDPOINT SECONDS [KINDS]   (KINDS: comma-separated kinds the greedy worker offers)
"""
import json
import os
import random
import sys
import threading
import time

import zmq
from opqueue import opqueue_pb2 as pb  # the package in python/ (scripts/setup installs it in .venv-python)
from opqueue.wire import decode, encode

endpoint, seconds = sys.argv[1], float(sys.argv[2])
greedy_kinds = (sys.argv[3] if len(sys.argv) > 3 else "sleep,noop").split(",")
ctx = zmq.Context()
stop_at = time.monotonic() + seconds
stats = {"garbage": 0, "hello_spam": 0, "hello_rejected": 0, "hello_oversized": 0, "greedy_credit_grants": 0,
         "greedy_most_held": 0, "greedy_taken_back": 0, "greedy_reregistered": 0, "oversized_sent": 0, "oversized_refused": 0}
failures = []
lock = threading.Lock()
rng = random.Random(7)


def count(key, n=1):
    with lock:
        stats[key] += n


def label(n, tag):
    return (tag + "-" + "x" * n)[:n]


def dealer():
    s = ctx.socket(zmq.DEALER)
    s.setsockopt(zmq.LINGER, 0)
    s.setsockopt(zmq.MAXMSGSIZE, -1)
    s.connect(endpoint)
    return s


def garbage():
    s = dealer()
    for i in range(200_000):
        if time.monotonic() > stop_at:
            break
        kind = i % 4
        if kind == 0:
            s.send_multipart([os.urandom(rng.randint(0, 16)), os.urandom(rng.randint(0, 256))])
        elif kind == 1:
            s.send_multipart([b"OQ\x01"])                         # truncated header
        elif kind == 2:
            s.send_multipart([b"OQ\x01\x7f\x00\x00\x00\x01", b""])  # unknown command
        else:
            s.send_multipart([b"OQ\x09\x26\x00\x00\x00\x01", b""])  # unsupported version
        count("garbage")
        while s.poll(0):
            s.recv_multipart()
        time.sleep(0.002)
    s.close()


def hello_spam():
    # The most a HELLO may carry (PROTOCOL.md §10): 256 kinds and 64 tags of 256 bytes each.
    big = pb.Hello(protocol_version=1, name=label(256, "spam"), slots=1,
                   kinds=[label(256, "k%d" % i) for i in range(256)], tags=[label(256, "t%d" % i) for i in range(64)])
    over = pb.Hello(protocol_version=1, name="over", slots=1, kinds=[label(1024, "k%d" % i) for i in range(2000)])
    for i in range(2_000):
        if time.monotonic() > stop_at:
            break
        s = dealer()
        if i % 10 == 9:
            s.send_multipart(encode("HELLO", over))
            count("hello_oversized")
            if s.poll(3000):
                name, _, msg = decode(s.recv_multipart())
                if name == "REJECT":
                    count("hello_rejected")
                else:
                    failures.append("an oversized HELLO got %s, not REJECT" % name)
            else:
                failures.append("no answer to an oversized HELLO within 3 s")
        else:
            big.name = "spam-%d" % i
            s.send_multipart(encode("HELLO", big))   # registers, then vanishes without a word
            count("hello_spam")
        s.close()
        time.sleep(0.1)   # 10 registrations a second: churn, not a CPU flood (against that: keys, issue 13)


def greedy():
    s = dealer()
    s.send_multipart(encode("HELLO", pb.Hello(protocol_version=1, name="greedy", slots=1, kinds=greedy_kinds, prefetch=0)))
    held = {}
    last_grant = 0.0
    last_beat = 0.0
    while time.monotonic() < stop_at:
        now = time.monotonic()
        if now - last_grant > 0.2:
            s.send_multipart(encode("CREDIT", pb.Credit(credit=1_000_000)))
            count("greedy_credit_grants")
            last_grant = now
        if now - last_beat > 0.1:
            s.send_multipart(encode("HEARTBEAT"))
            last_beat = now
        if not s.poll(50):
            continue
        name, _, msg = decode(s.recv_multipart())
        if name == "DISPATCH":
            for r in msg.records:
                held[(r.op_id, r.part, r.attempt)] = True
            with lock:
                stats["greedy_most_held"] = max(stats["greedy_most_held"], len(held))
        elif name == "CANCEL":
            fin = pb.Finished(credit=0)
            for r in msg.records:
                for key in [k for k in held if k[0] == r.op_id and k[2] == r.attempt]:
                    del held[key]
                    fin.records.add(op_id=key[0], part=key[1], attempt=key[2], cancelled=r.reason)
                    count("greedy_taken_back")
            if fin.records:
                s.send_multipart(encode("FINISHED", fin))
        elif name == "WELCOME":
            # A new session: whatever an earlier one held was taken back with it (a HELLO that lists no
            # running parts), so it no longer counts. Two DISCONNECTs in a row (one per message it sent
            # while lost) mean two HELLOs: the first session's dispatches arrive before the second WELCOME.
            held.clear()
        elif name == "DISCONNECT":
            # Declared lost (a starved thread on a loaded machine misses heartbeats): a greedy peer
            # registers again and goes on being greedy, as the real one would.
            held.clear()
            count("greedy_reregistered")
            s.send_multipart(encode("HELLO", pb.Hello(protocol_version=1, name="greedy", slots=1, kinds=greedy_kinds, prefetch=0)))
    s.send_multipart(encode("DISCONNECT", pb.Disconnect(reason="greedy worker leaving")))
    s.close()


def oversized():
    for i in range(20):
        if time.monotonic() > stop_at:
            break
        s = dealer()
        if i % 2 == 0:
            # A SUBMIT body over 16 MiB: refused (the connection is dropped at the size limit).
            op = pb.Operation(id="huge", kind="noop", payload=b"x" * (17 << 20))
            s.send_multipart(encode("SUBMIT", pb.Submit(operations=[op]), request_id=1))
        else:
            # More ids than one batch may name: ERROR TOO_LARGE.
            s.send_multipart(encode("STATUS", pb.Status(op_ids=["x%d" % j for j in range(9000)]), request_id=2))
        count("oversized_sent")
        if s.poll(2000):
            name, _, _ = decode(s.recv_multipart())
            if name == "ERROR":
                count("oversized_refused")
        else:
            count("oversized_refused")  # dropped at the socket's size limit: nothing reaches the coordinator
        s.close()
        time.sleep(0.2)


threads = [threading.Thread(target=f, daemon=True) for f in (garbage, hello_spam, greedy, oversized)]
for t in threads:
    t.start()
for t in threads:
    t.join(timeout=seconds + 15)
if seconds >= 10 and stats["greedy_taken_back"] == 0:
    failures.append("nothing the greedy worker sat on was taken back")
if stats["greedy_most_held"] > 1:
    failures.append("the greedy worker (1 slot, prefetch 0) held %d parts at once" % stats["greedy_most_held"])
if stats["hello_oversized"] and stats["hello_rejected"] < stats["hello_oversized"]:
    failures.append("%d of %d oversized HELLOs were not rejected" % (stats["hello_oversized"] - stats["hello_rejected"],
                                                                    stats["hello_oversized"]))
print(json.dumps({"stats": stats, "failures": failures}))
ctx.destroy(linger=0)
sys.exit(1 if failures else 0)
