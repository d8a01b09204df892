"""Leadership (docs/PROTOCOL.md §14, issue 29), as the Swift client and worker do it (WireProtocol's
EpochFence and NotLeader, OpClient's CoordinatorEndpoints): the coordinators a client or worker may reach,
what an ERROR NOT_LEADER says, and the epoch fence that ignores a replaced leader's late messages."""
from __future__ import annotations

import os
from typing import Any

DEFAULT_ENDPOINT = "tcp://127.0.0.1:7600"
NOT_LEADER_PREFIX = "not the leader; "
_LEADER_MARKER = NOT_LEADER_PREFIX + "leader: "
# With several coordinators, one whose connection is down this long (never made, or lost) is left for the
# next: most likely a leader that died, and the next one answers or names the new leader.
NEXT_ENDPOINT_AFTER = 0.25
# Told NOT_LEADER with no leader named (one is being elected): ask again this much later.
NOT_LEADER_PAUSE = 0.1


def default_endpoint() -> str:
    """$OPCOORD (one endpoint or several, comma-separated), else tcp://127.0.0.1:7600."""
    return os.environ.get("OPCOORD") or DEFAULT_ENDPOINT


def normalised(endpoint: str) -> str:
    """`HOST:PORT` is taken as `tcp://HOST:PORT`; anything with a scheme is left as it is."""
    e = endpoint.strip()
    host, colon, port = e.rpartition(":")
    if "://" not in e and colon and host and port.isdigit():
        return "tcp://" + e
    return e


def not_leader(message: str) -> str | None:
    """The leader's endpoint an ERROR NOT_LEADER (or a standby's DISCONNECT) names; None when it names
    none (`not the leader; no leader elected yet`)."""
    if not message.startswith(_LEADER_MARKER):
        return None
    return normalised(message[len(_LEADER_MARKER):]) or None


class Endpoints:
    """The coordinators a client or worker may reach (`tcp://a:7600,tcp://b:7600`), the one in use, and
    where to go next: the leader a standby names (it need not be in the list), else the next of the list."""

    # A redirect to an endpoint that failed is followed after this many refusals: the standby named it
    # that often, so it may be right (the failure was the network's; a dead leader's lease expires and
    # the standbys then stop naming it).
    REDIRECT_PATIENCE = 10

    def __init__(self, given: str | None) -> None:
        text = default_endpoint() if given is None else given
        self.all = [normalised(p) for p in text.split(",") if p.strip()]
        if not self.all:
            raise ValueError("no coordinator endpoint given (%r): expected tcp://HOST:PORT[,tcp://HOST:PORT…]" % text)
        for e in self.all:
            if "://" not in e:
                raise ValueError("coordinator endpoint %r is not tcp://HOST:PORT (nor HOST:PORT)" % e)
        self.current = self.all[0]
        self.failed: dict[str, int] = {}  # unreachable since the last success -> redirects to it refused since

    @property
    def several(self) -> bool:
        return len(self.all) > 1

    def __str__(self) -> str:
        return ",".join(self.all)

    def redirect(self, leader: str | None) -> bool:
        """Told NOT_LEADER by `current`: go to the leader it names. One that failed is not followed (the
        standby may not know yet that it died: ask it again) until named REDIRECT_PATIENCE times.
        Returns whether `current` changed."""
        if leader is None or leader == self.current:
            return False
        if leader in self.failed:
            refused = self.failed[leader] + 1
            if refused < self.REDIRECT_PATIENCE:
                self.failed[leader] = refused
                return False
            del self.failed[leader]
        self.current = leader
        return True

    def unreachable(self) -> bool:
        """`current` could not be reached: mark it and move to the next endpoint of the list (round robin).
        With every endpoint failed the marks are cleared (try them all again). Returns whether it moved."""
        self.failed[self.current] = 0
        if all(e in self.failed for e in self.all):
            self.failed.clear()
        if not self.several:
            return False
        start = self.all.index(self.current) + 1 if self.current in self.all else 0
        for i in range(len(self.all)):
            e = self.all[(start + i) % len(self.all)]
            if e != self.current and e not in self.failed:
                self.current = e
                return True
        return False

    def reached(self) -> None:
        """`current` answered: forget the failures."""
        self.failed.clear()


def epoch_of(msg: Any) -> int:
    """The leadership epoch (field 90) a coordinator's message carries; 0 when it has none."""
    return int(getattr(msg, "epoch", 0) or 0)


class EpochFence:
    """The highest epoch seen (over every connection and session of one client or worker). A message with
    a lower non-zero epoch comes from a leader that has been replaced (it may not know yet): ignored.
    Epoch 0 (a coordinator without --ha) is never fenced."""

    def __init__(self) -> None:
        self.highest = 0
        self.fenced = 0  # messages ignored for a stale epoch

    def admit(self, msg: Any) -> bool:
        e = epoch_of(msg)
        if e == 0:
            return True
        if e < self.highest:
            self.fenced += 1
            return False
        self.highest = e
        return True


class Leadership:
    """What a client or a worker shows of the coordinators it talks to: the endpoint in use, the highest
    epoch seen and what it fenced. Mixed into AsyncClient and Worker, which set `endpoints` and `fence`."""

    endpoints: Endpoints
    fence: EpochFence

    @property
    def endpoint(self) -> str:
        """The coordinator in use: one of the list, or the leader a standby named."""
        return self.endpoints.current

    @property
    def fenced(self) -> int:
        """Messages of a replaced leader (a lower epoch: replies, events, dispatches) that were ignored."""
        return self.fence.fenced

    @property
    def epoch(self) -> int:
        """The highest leadership epoch seen (0: none, a coordinator without --ha)."""
        return self.fence.highest
