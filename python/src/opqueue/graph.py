"""Graph files (docs/GRAPHS.md) read into SUBMIT's messages: JSON always, YAML with PyYAML installed
(`pip install 'opqueue[yaml]'`). The field rules are GRAPHS.md's; what is not checked here the
coordinator refuses with a precise SUBMIT error."""
from __future__ import annotations

import json
from typing import Any

from . import codec
from . import opqueue_pb2 as pb
from .client import _queue_settings, priority_value, qos_value

FIELDS = {"id", "name", "kind", "payload", "command", "argv", "env", "cwd", "grace", "after", "priority", "qos",
          "queue", "parts", "policy", "retries", "retryDelay", "retryDelayMax", "lossRetries", "timeout", "requires",
          "barrier", "share", "concurrencyKey"}


class GraphFileError(ValueError):
    """A graph file that cannot be read; the message names the file and the place."""


def _parse(path: str) -> Any:
    with open(path, "rb") as f:
        text = f.read()
    if path.endswith(".json"):
        try:
            return json.loads(text)
        except ValueError as e:
            raise GraphFileError("%s: not JSON: %s" % (path, e)) from None
    try:
        import yaml
    except ImportError:
        try:
            return json.loads(text)
        except ValueError:
            raise GraphFileError("%s: YAML graph files need PyYAML (pip install 'opqueue[yaml]'); JSON ones do not"
                                 % path) from None
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise GraphFileError("%s: not YAML: %s" % (path, e)) from None


def _payload(where: str, o: dict[str, Any]) -> bytes:
    if "command" in o or "argv" in o:
        shell: dict[str, Any] = {}
        if "command" in o:
            if isinstance(o["command"], list):
                shell["argv"] = o["command"]
            else:
                shell["command"] = o["command"]
        if "argv" in o:
            shell["argv"] = o["argv"]
        for k in ("env", "cwd", "grace"):
            if k in o:
                shell[k] = o[k]
        return codec.encode_json(shell)
    p = o.get("payload")
    if p is None:
        return b""
    if isinstance(p, (dict, list)):
        return codec.encode_json(p)
    if isinstance(p, bool):
        return b"true" if p else b"false"
    return str(p).encode()  # a scalar's text (GRAPHS.md)


def load_graph(path: str) -> tuple[list[dict[str, Any]], list[pb.Operation]]:
    """(queue settings, operations) of a graph file."""
    doc = _parse(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("operations"), list):
        raise GraphFileError("%s: a graph file is a mapping with an `operations` list" % path)
    queues = doc.get("queues") or []
    if not isinstance(queues, list) or not all(isinstance(q, dict) and "name" in q for q in queues):
        raise GraphFileError("%s: `queues` is a list of mappings, each with a `name`" % path)
    for q in queues:
        _queue_settings(q)  # raises on a bad qos
    ops = []
    for i, o in enumerate(doc["operations"]):
        where = "%s: operations[%d]" % (path, i)
        if not isinstance(o, dict) or "id" not in o:
            raise GraphFileError("%s: an operation is a mapping with an `id`" % where)
        unknown = set(o) - FIELDS
        if unknown:
            raise GraphFileError("%s (%s): unknown field(s) %s" % (where, o["id"], ", ".join(sorted(unknown))))
        try:
            op = pb.Operation(
                id=str(o["id"]), name=str(o.get("name", "")),
                kind=str(o.get("kind", "shell" if "command" in o or "argv" in o else "")),
                payload=_payload(where, o), after=[str(a) for a in o.get("after", [])],
                priority=priority_value(o.get("priority", 0)), qos=qos_value(o.get("qos")), queue=str(o.get("queue", "")),
                parts=int(o.get("parts", 1)), retries=int(o.get("retries", 0)), requires=[str(t) for t in o.get("requires", [])],
                barrier=bool(o.get("barrier", False)),
                policy=pb.DEPENDENCY_POLICY_SUCCEEDED if o.get("policy") == "succeeded" else pb.DEPENDENCY_POLICY_FINISHED)
            if o.get("policy", "finished") not in ("finished", "succeeded"):
                raise ValueError("policy must be 'finished' or 'succeeded'")
            if "timeout" in o:
                op.timeout_us = int(float(o["timeout"]) * 1e6)
            if "lossRetries" in o:
                op.loss_retries = int(o["lossRetries"])
            if "retryDelay" in o:
                op.retry_delay_us = int(float(o["retryDelay"]) * 1e6)
            if "retryDelayMax" in o:
                op.retry_delay_max_us = int(float(o["retryDelayMax"]) * 1e6)
            if "share" in o:
                op.share = str(o["share"])
            if "concurrencyKey" in o:
                op.concurrency_key = str(o["concurrencyKey"])
        except (TypeError, ValueError) as e:
            raise GraphFileError("%s (%s): %s" % (where, o["id"], e)) from None
        if not op.kind:
            raise GraphFileError("%s (%s): `kind` (or `command`) is required" % (where, op.id))
        ops.append(op)
    return queues, ops
