"""The exceptions the package raises; every one is an `OpqueueError`."""
from __future__ import annotations

import json
from typing import Any

TYPED_MARKER = "opq-typed/1 "


class OpqueueError(Exception):
    """Base of every error this package raises."""


class Timeout(OpqueueError, TimeoutError):
    """A bounded wait ended before what it waited for (also a built-in `TimeoutError`)."""


class RequestRefused(OpqueueError):
    """The coordinator answered a request with ERROR (`code` is the ErrorCode name, e.g. "BUSY")."""

    def __init__(self, message: str, code: str = "UNSPECIFIED", op_id: str = "") -> None:
        super().__init__(message)
        self.code, self.op_id = code, op_id


class UnknownOperation(RequestRefused):
    """ERROR NOT_FOUND: an operation, run or queue the coordinator does not know (or no longer keeps)."""


class Unauthorized(RequestRefused):
    """ERROR UNAUTHORIZED: the client's key may not do this (docs/PROTOCOL.md §12)."""


class AuthenticationFailed(Unauthorized):
    """The CURVE handshake was refused: a key the coordinator does not allow, or keys on one side only."""


class SubmitRejected(OpqueueError):
    """A SUBMIT was refused as a whole; `errors` lists every problem (op id, problem, field, message)."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        self.errors = errors
        super().__init__("SUBMIT rejected: " + "; ".join(
            "%s: %s%s" % (e["op_id"] or "-", e["message"] or e["problem"], " (field %s)" % e["field"] if e["field"] else "")
            for e in errors))


class OperationFailed(OpqueueError):
    """The operation finished failed. `message` is its failure text; `typed` the decoded `opq-typed/1`
    object of a typed Swift failure (docs/HANDLERS.md, "The wire form"), else None."""

    def __init__(self, op_id: str, message: str) -> None:
        super().__init__("operation %s failed: %s" % (op_id, message))
        self.op_id, self.message = op_id, message
        self.typed: dict[str, Any] | None = None
        last = message.rsplit("\n", 1)[-1]
        if last.startswith(TYPED_MARKER):
            try:
                self.typed = json.loads(last[len(TYPED_MARKER):])
            except ValueError:
                self.typed = None


class OperationCancelled(OpqueueError):
    """The operation finished cancelled; `reason` says by whom or why."""

    def __init__(self, op_id: str, reason: str) -> None:
        super().__init__("operation %s cancelled: %s" % (op_id, reason))
        self.op_id, self.reason = op_id, reason


class Cancelled(Exception):
    """Raised by a handler (or `Context.raise_if_cancelled()`) to end its part as cancelled."""


class TypedFailure(Exception):
    """Raised by a handler of a typed Swift operation's kind: fails the part with the typed wire form
    (docs/HANDLERS.md, "The wire form"), which a Swift client catches as its `Failure` type `type_name`.

        raise TypedFailure("tooSmall(side: 8)", "ResizeError", {"tooSmall": {"side": 8}})
    """

    def __init__(self, description: str, type_name: str, value: Any) -> None:
        super().__init__(description)
        self.description, self.type_name, self.value = description, type_name, value

    @property
    def text(self) -> str:
        """The failure text: the description, then the `opq-typed/1` line."""
        line = json.dumps({"error": "failure", "type": self.type_name, "value": self.value}, separators=(",", ":"))
        return "%s\n%s%s" % (self.description, TYPED_MARKER, line)
