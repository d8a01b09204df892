"""libzmq drops a connection whose handshake failed with a protocol error and never reconnects it: a
request sent after that must end within its timeout, not wait for a connection for ever (the Swift
client's DroppedHandshakeTests, here for the Python client)."""
from __future__ import annotations

import asyncio
import socket
import threading

from opqueue import AsyncClient, OpqueueError

# A ZMTP 3.0 greeting as a server for the NULL mechanism, then a HELLO command a NULL client does not
# expect: the client's libzmq fails the handshake with a protocol error (not a mismatch of keys).
GREETING = bytes([0xFF] + [0] * 8 + [0x7F, 3, 0]) + b"NULL".ljust(20, b"\0") + bytes([1]) + bytes(31)
UNEXPECTED_HELLO = bytes([0x04, 6, 5]) + b"HELLO"


class GreetingPeer:
    """Answers each connection on 127.0.0.1 with GREETING + UNEXPECTED_HELLO and reads until it closes."""

    def __init__(self) -> None:
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        self.closed = threading.Semaphore(0)
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            conn.sendall(GREETING + UNEXPECTED_HELLO)
            while conn.recv(256):
                pass
            conn.close()
            self.closed.release()

    def stop(self) -> None:
        self.listener.close()


def test_requests_after_libzmq_dropped_the_connection_end_within_their_timeout() -> None:
    peer = GreetingPeer()

    async def main() -> list[str]:
        client = AsyncClient("tcp://127.0.0.1:%d" % peer.port, timeout=0.3)
        outcomes = []
        try:
            client._open()
            assert await asyncio.get_running_loop().run_in_executor(None, peer.closed.acquire, True, 5)
            for _ in range(4):
                try:
                    await client.workers()
                    outcomes.append("a reply")
                except OpqueueError as e:
                    outcomes.append(str(e))
        finally:
            await client.close()
        return outcomes

    try:
        outcomes = asyncio.run(asyncio.wait_for(main(), 10))
    finally:
        peer.stop()
    # Each ends within its timeout with a clear error: no reply (the send went into a connection libzmq
    # then dropped), or — when even a fresh connection was dropped before the send — not a coordinator.
    assert len(outcomes) == 4 and all("no reply to WORKERS" in o or "not an opqueue coordinator" in o
                                      for o in outcomes), outcomes


def test_many_requests_queued_while_the_coordinator_is_away_are_not_taken_for_a_dropped_connection() -> None:
    """Sends never wait, so a full send queue must not look like a dropped connection: 1,500 requests
    queued while nothing listens (more than libzmq's default high-water mark of 1,000) each end with
    "no reply" after their timeout."""
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]

    async def main() -> list[str]:
        client = AsyncClient("tcp://127.0.0.1:%d" % port, timeout=1.0)
        try:
            results = await asyncio.gather(*(client.workers() for _ in range(1500)), return_exceptions=True)
        finally:
            await client.close()
        return [str(r) for r in results]

    outcomes = asyncio.run(asyncio.wait_for(main(), 20))
    assert len(outcomes) == 1500
    wrong = [o for o in outcomes if "no reply to WORKERS" not in o]
    assert not wrong, wrong[:3]
