"""CURVE keys for Python clients and workers (the rules of Sources/ZeroMQ/KeyFile.swift).

Key files are made by `opctl keys new PATH`: PATH holds the secret key (mode 0600; `#` comment lines,
then the 40-character Z85 key on one line), PATH.pub the public key. A client or worker needs its own
secret key file and the coordinator's public key (the 40 characters, or a file holding them), from
--key / --coordinator-key or $OPQ_KEY / $OPQ_COORDINATOR_KEY; neither means no keys (a loopback or
--insecure coordinator), one without the other is a mistake.

    keys = resolve(key, coordinator_key)   # None or Keys; raises KeyFileError
    watch = prepare(sock, keys)            # before sock.connect(...); sock may be a zmq.asyncio socket
    why = watch.refusal()                  # "authentication failed: ..." or None (never blocks)
"""
from __future__ import annotations

import argparse
import itertools
import os
import stat
import time
from typing import Mapping

import zmq
from zmq.utils import z85
from zmq.utils.monitor import recv_monitor_message

from .errors import OpqueueError

Z85_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#")
MAX_FILE = 64 << 10
MAKE = "key files are made by 'opctl keys new PATH'"


class KeyFileError(OpqueueError):
    """Why keys cannot be used, with what to do about it (str(e) is the whole message)."""


class Keys:
    """A client's CURVE keys: its secret and public key and the coordinator's public key (Z85 bytes)."""

    def __init__(self, secret: bytes, public: bytes, server: bytes) -> None:
        self.secret, self.public, self.server = secret, public, server


def _z85_key(text: str) -> bytes | None:
    """The 32-byte key's Z85 text as bytes, or None if `text` is not one."""
    if len(text) != 40 or not set(text) <= Z85_CHARS:
        return None
    try:
        if len(z85.decode(text.encode())) != 32:
            return None
    except Exception:  # a 5-character group above 2^32 - 1
        return None
    return text.encode()


def _key_line(text: str) -> str | None:
    """The first line that is not blank or a `#` comment."""
    for line in text.split("\n"):
        t = line.strip()
        if t and not t.startswith("#"):
            return t
    return None


def _read(path: str) -> str:
    try:
        with open(path, "rb") as f:
            data = f.read(MAX_FILE + 1)
    except OSError as e:
        raise KeyFileError("cannot use key file '%s': %s" % (path, e.strerror))
    if len(data) > MAX_FILE:
        raise KeyFileError("'%s' does not hold a CURVE key (larger than a key file can be); %s" % (path, MAKE))
    return data.decode("utf-8", errors="replace")


def load_secret(path: str) -> tuple[bytes, bytes]:
    """(secret, public) Z85 bytes of the key pair whose secret half is in `path`."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise KeyFileError("key file '%s' does not exist: create a key pair with 'opctl keys new %s'" % (path, path))
    except OSError as e:
        raise KeyFileError("cannot use key file '%s': %s" % (path, e.strerror))
    if not stat.S_ISREG(st.st_mode):
        raise KeyFileError("cannot use key file '%s': not a regular file" % path)
    mode = stat.S_IMODE(st.st_mode) & 0o777
    if mode & 0o077:
        raise KeyFileError("permissions %o for key file '%s' are too open: a secret key must be readable by "
                           "its owner only (chmod 600 '%s')" % (mode, path, path))
    line = _key_line(_read(path))
    if line is None:
        raise KeyFileError("'%s' does not hold a CURVE key (no key in it); %s" % (path, MAKE))
    secret = _z85_key(line)
    if secret is None:
        raise KeyFileError("'%s' does not hold a CURVE key (not 40 Z85 characters); %s" % (path, MAKE))
    return secret, zmq.curve_public(secret)


def load_public(key_or_path: str) -> bytes:
    """Z85 bytes of a public key given as its 40 characters or as the path of a file holding them."""
    given = key_or_path.strip()
    # Z85 has '/' and '.' in it, so a key can look like a path: a file that exists wins.
    if not os.path.exists(given):
        key = _z85_key(given)
        if key is not None:
            return key
        raise KeyFileError("'%s' does not hold a CURVE key (neither a public key (40 Z85 characters) nor a "
                           "readable file holding one); %s" % (given, MAKE))
    line = _key_line(_read(given))
    if line is None:
        raise KeyFileError("'%s' does not hold a CURVE key (no key in it); %s" % (given, MAKE))
    key = _z85_key(line)
    if key is None:
        raise KeyFileError("'%s' does not hold a CURVE key (not 40 Z85 characters); %s" % (given, MAKE))
    return key


def resolve(key: str | None = None, coordinator_key: str | None = None,
            environ: Mapping[str, str] | None = None) -> Keys | None:
    """Keys from the flags, else $OPQ_KEY / $OPQ_COORDINATOR_KEY; None when neither is given."""
    env = os.environ if environ is None else environ
    secret_path = key or env.get("OPQ_KEY") or None
    server = coordinator_key or env.get("OPQ_COORDINATOR_KEY") or None
    if secret_path is None and server is None:
        return None
    if server is None:
        raise KeyFileError("a key was given (--key or $OPQ_KEY) without the coordinator's public key: pass "
                           "--coordinator-key KEY-OR-.pub-FILE (or $OPQ_COORDINATOR_KEY) so the coordinator "
                           "is verified, not trusted on first use")
    if secret_path is None:
        raise KeyFileError("the coordinator's public key was given without a key of your own: pass --key PATH "
                           "(or $OPQ_KEY); make one with 'opctl keys new PATH'")
    secret, public = load_secret(secret_path)
    return Keys(secret, public, load_public(server))


class HandshakeWatch:
    """Reads a socket's monitor for the handshake outcome, so a refused key is said at once instead of
    looking like a silent coordinator."""

    EVENTS = (zmq.EVENT_HANDSHAKE_SUCCEEDED | zmq.EVENT_HANDSHAKE_FAILED_AUTH
              | zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL | zmq.EVENT_DISCONNECTED)

    _numbers = itertools.count()

    def __init__(self, sock: zmq.Socket, keyed: bool, who: str) -> None:
        self.keyed, self.who = keyed, who
        # A plain (blocking-API) PAIR socket on the same context, also for a zmq.asyncio socket, so
        # refusal() can drain it without an event loop.
        address = "inproc://opqueue-monitor-%d-%d" % (os.getpid(), next(self._numbers))
        sock.monitor(address, self.EVENTS)
        self.socket: zmq.Socket = zmq.Context.shadow(sock.context.underlying).socket(zmq.PAIR)
        self.socket.connect(address)
        self.closes = 0  # connections closed during the handshake, in a row
        self.up = False
        # Since when the link has been down (never made, or lost); None while up. With several
        # coordinators, one down this long is left for the next (PROTOCOL.md §14).
        self.down_since: float | None = time.monotonic()
        self.handshakes = 0  # handshakes that succeeded: a new one after the first is a reconnection

    def refusal(self) -> str | None:
        """Drains the monitor; "authentication failed: WHY" once the coordinator refused us, else None."""
        while self.socket.poll(0):
            ev = recv_monitor_message(self.socket)
            kind, value = ev["event"], ev["value"]
            if kind == zmq.EVENT_HANDSHAKE_SUCCEEDED:
                self.up, self.closes, self.down_since = True, 0, None
                self.handshakes += 1
            elif kind == zmq.EVENT_HANDSHAKE_FAILED_AUTH:
                return "authentication failed: " + (
                    "the coordinator does not allow this %s's key (status %d): ask its operator to add the "
                    ".pub file's key to its allow file" % (self.who, value) if self.keyed
                    else "the coordinator requires a key")
            elif kind == zmq.EVENT_HANDSHAKE_FAILED_PROTOCOL and value == zmq.PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH:
                return "authentication failed: " + (
                    "the coordinator does not use keys (it listens without CURVE): leave out --key and "
                    "--coordinator-key" if self.keyed
                    else "the coordinator requires keys (CURVE): pass --key YOUR.key and --coordinator-key "
                    "ITS-PUBLIC-KEY (or $OPQ_KEY, $OPQ_COORDINATOR_KEY)")
            elif kind == zmq.EVENT_DISCONNECTED:
                if self.up:
                    self.up, self.down_since = False, time.monotonic()
                elif self.keyed:
                    # A CURVE server that cannot open our HELLO (not the key we were given) just closes;
                    # a restarting coordinator may too, but not three times in a row.
                    self.closes += 1
                    if self.closes >= 3:
                        return ("authentication failed: the coordinator closed every connection during the "
                                "CURVE handshake: --coordinator-key is probably not its public key")
        return None

    def close(self) -> None:
        self.socket.close(linger=0)


def prepare(sock: zmq.Socket, keys: Keys | None, who: str = "client") -> HandshakeWatch:
    """Sets `sock`'s CURVE keys (if any) and starts watching its handshakes; call before connect."""
    if keys is not None:
        sock.curve_secretkey = keys.secret
        sock.curve_publickey = keys.public
        sock.curve_serverkey = keys.server
    return HandshakeWatch(sock, keys is not None, who)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """--key and --coordinator-key for an argparse parser."""
    parser.add_argument("--key", metavar="PATH",
                        help="this program's secret key file, made by 'opctl keys new PATH' (or $OPQ_KEY)")
    parser.add_argument("--coordinator-key", metavar="KEY-OR-FILE",
                        help="the coordinator's public key, or its .pub file (or $OPQ_COORDINATOR_KEY)")
