"""opqueue wire protocol v1 framing for Python (docs/PROTOCOL.md).

A message is two ZeroMQ frames: an 8-byte header and a protobuf body.
Header: b"OQ", version (1), command code, request id (uint32 big-endian).
"""
from __future__ import annotations

import struct
from typing import Any, Sequence

from google.protobuf.message import Message

from . import opqueue_pb2 as pb

SIGNATURE = b"OQ"
VERSION = 1
HEADER_SIZE = 8
MAX_BODY_SIZE = 16 << 20

# command code -> (name, body message class or None for an empty body)
COMMANDS: dict[int, tuple[str, Any]] = {
    0x01: ("HELLO", pb.Hello), 0x02: ("WELCOME", pb.Welcome), 0x03: ("REJECT", pb.Reject),
    0x04: ("CREDIT", pb.Credit), 0x05: ("DISPATCH", pb.Dispatch), 0x06: ("STARTED", pb.Started),
    0x07: ("PROGRESS", pb.Progress), 0x08: ("FINISHED", pb.Finished), 0x09: ("CANCEL", pb.Cancel),
    0x0A: ("HEARTBEAT", pb.Heartbeat), 0x0B: ("DISCONNECT", pb.Disconnect),
    0x20: ("SUBMIT", pb.Submit), 0x21: ("SUBMIT-REPLY", pb.SubmitReply), 0x22: ("CANCEL-OPS", pb.CancelOps),
    0x23: ("QUEUE", pb.QueueControl), 0x24: ("SET-PRIORITY", pb.SetPriority), 0x25: ("ACK", pb.Ack),
    0x26: ("STATUS", pb.Status), 0x27: ("STATUS-REPLY", pb.StatusReply), 0x28: ("WHY", pb.Why),
    0x29: ("WHY-REPLY", pb.WhyReply), 0x2A: ("WORKERS", pb.Workers), 0x2B: ("WORKERS-REPLY", pb.WorkersReply),
    0x2C: ("WATCH", pb.Watch), 0x2D: ("EVENT", pb.Events), 0x2E: ("WAIT", pb.Wait),
    0x2F: ("WAIT-REPLY", pb.WaitReply), 0x30: ("ERROR", pb.ErrorReply),
    0x31: ("RUNS", pb.Runs), 0x32: ("RUNS-REPLY", pb.RunsReply),
    0x33: ("LOGS", pb.Logs), 0x34: ("LOGS-REPLY", pb.LogsReply),
    0x35: ("STORY", pb.Story), 0x36: ("STORY-REPLY", pb.StoryReply),
    0x37: ("FOLLOW", pb.Follow), 0x38: ("JOURNAL", pb.JournalChunk), 0x39: ("SNAPSHOT", pb.SnapshotChunk),
    0x3A: ("REPLICA-ACK", pb.ReplicaAck), 0x3B: ("PROMOTE", pb.Promote),
    0x40: ("HA", pb.HighAvailability), 0x41: ("HA-REPLY", pb.HighAvailabilityReply),
}
CODE = {name: code for code, (name, _) in COMMANDS.items()}


class WireError(ValueError):
    """A frame sequence that is not a valid v1 message."""


def encode(name: str, body: Message | None = None, request_id: int = 0) -> list[bytes]:
    """Frames [header, body] for command `name` (e.g. "HELLO") and protobuf `body`."""
    code = CODE[name]
    if body is None:
        body = COMMANDS[code][1]()
    header = SIGNATURE + bytes([VERSION, code]) + struct.pack(">I", request_id)
    return [header, body.SerializeToString()]


def decode(frames: Sequence[bytes]) -> tuple[str, int, Any]:
    """(name, request_id, body message) or raises WireError."""
    if len(frames) < 1 or len(frames[0]) < HEADER_SIZE:
        raise WireError("truncated")
    header = bytes(frames[0])
    if len(header) != HEADER_SIZE:
        raise WireError("bad header length %d" % len(header))
    if header[:2] != SIGNATURE:
        raise WireError("bad signature")
    if header[2] != VERSION:
        raise WireError("unsupported version %d" % header[2])
    if header[3] not in COMMANDS:
        raise WireError("unknown command 0x%02x" % header[3])
    if len(frames) != 2:
        raise WireError("expected 2 frames, got %d" % len(frames))
    body = bytes(frames[1])
    if len(body) > MAX_BODY_SIZE:
        raise WireError("body too large")
    name, cls = COMMANDS[header[3]]
    msg = cls()
    try:
        msg.ParseFromString(body)
    except Exception as e:  # google.protobuf.message.DecodeError and friends
        raise WireError("malformed %s body: %s" % (name, e))
    (request_id,) = struct.unpack(">I", header[4:8])
    return name, request_id, msg
