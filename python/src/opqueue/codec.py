"""Payloads and results as bytes on the wire: JSON (the default, and typed Swift operations' form,
docs/HANDLERS.md "The wire form") or raw bytes."""
from __future__ import annotations

import json
from typing import Any, Literal

Mode = Literal["json", "bytes"]
MODES = ("json", "bytes")


def check_mode(mode: str, what: str) -> Mode:
    if mode not in MODES:
        raise ValueError("%s must be 'json' or 'bytes', not %r" % (what, mode))
    return mode  # type: ignore[return-value]


def encode_json(value: Any) -> bytes:
    """Compact JSON, as Swift's JSONEncoder writes it (no NaN or infinity: JSON has none)."""
    return json.dumps(value, allow_nan=False, ensure_ascii=False, separators=(",", ":")).encode()


def encode_value(value: Any) -> bytes:
    """A client's payload: bytes as they are, None as empty, anything else as JSON."""
    if value is None:
        return b""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    return encode_json(value)


def decode_json(data: bytes) -> Any:
    """Empty is None (a Void result, no payload); else JSON, or ValueError."""
    if not data:
        return None
    return json.loads(data)


def decode_value(data: bytes) -> Any:
    """A result or input whose form is not declared: JSON when it is JSON, else the bytes."""
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return bytes(data)


def excerpt(data: bytes, limit: int = 60) -> str:
    return repr(data[:limit]) + ("… (%d bytes)" % len(data) if len(data) > limit else "")
