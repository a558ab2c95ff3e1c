"""Remote bots in a tournament: which scheduled match may be played now, and which remote bot
the run has stopped waiting for.

The tournament's hub (:mod:`referee.hub`) holds the remote bots' connections; the
coordinator asks :class:`RemoteGate` before it hands a match with a remote bot to a worker:

- A remote bot plays at most as many matches at once as it has connections, and never more
  than its ``connections``; a match that would need another is held back while other
  matches play, and goes as soon as a connection is free.
- A remote bot with no connection is waited for up to ``connect_timeout_s`` (its matches held
  back, the others played meanwhile). Then the run reports it and stops waiting: each of its
  matches is played at once and forfeited by it (fault ``handshake``; void if its opponent
  is an absent remote bot too) until it connects again, which is reported too.
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from referee.bots import BotSpec
from referee.hub import LineCounts
from tournaments.schedule.pairings import ScheduledMatch

__all__ = ["RemoteGate", "advertised_host"]


class RemoteGate:
    """Admits matches with remote bots as their connections allow (see the module).

    ``counts``: each remote bot's lines by public key, as the hub sees them now; ``note``
    reports a remote bot that connects, or that the run stops waiting for; ``rejection``:
    why the hub last rejected a bot's hello, if it did.
    """

    def __init__(
        self,
        bots: Sequence[BotSpec],
        counts: Callable[[], Mapping[str, LineCounts]],
        *,
        wait_s: float,
        note: Callable[[str], None],
        rejection: Callable[[str], str | None] = lambda _key: None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._remote = {spec.name: spec for spec in bots if spec.is_remote}
        self._counts = counts
        self._wait_s = wait_s
        self._note = note
        self._rejection = rejection
        self._clock = clock
        self._in_flight: Counter[str] = Counter()
        self._missing_since: dict[str, float] = {}
        #: Remote bots the run stopped waiting for (until they connect).
        self.absent: set[str] = set()
        self._seen: set[str] = set()

    def involves(self, match: ScheduledMatch) -> bool:
        """True if a remote bot plays in ``match``."""
        return any(name in self._remote for name in match.seats)

    def admit(self, match: ScheduledMatch) -> tuple[str, ...] | None:
        """The remote bots of ``match`` it does not wait for, if it may be played now (its
        connections are then counted as taken until :meth:`done`); None to hold it back."""
        names = sorted({name for name in match.seats if name in self._remote})
        counts = self._counts()
        now = self._clock()
        absent = []
        for name in names:
            spec = self._remote[name]
            lines = counts.get(spec.curve_public_key or "", LineCounts(0, 0)).lines
            self._observe(name, lines, now)
            if lines == 0:
                if name not in self.absent:
                    return None
                absent.append(name)
            elif self._in_flight[name] >= min(lines, spec.connections):
                return None
        for name in names:
            self._in_flight[name] += 1
        return tuple(absent)

    def done(self, match: ScheduledMatch) -> None:
        """``match`` (admitted before) is over: its remote bots' connections are free."""
        for name in {name for name in match.seats if name in self._remote}:
            self._in_flight[name] -= 1

    def _observe(self, name: str, lines: int, now: float) -> None:
        spec = self._remote[name]
        if lines > 0:
            self._missing_since.pop(name, None)
            if name in self.absent:
                self.absent.discard(name)
                self._note(f"Remote bot {name} has connected: its matches are played again")
            elif name not in self._seen:
                self._note(f"Remote bot {name} has connected")
            self._seen.add(name)
            return
        since = self._missing_since.setdefault(name, now)
        if name in self.absent or now - since < self._wait_s:
            return
        self.absent.add(name)
        why = self._rejection(spec.curve_public_key or "")
        self._note(
            f"Remote bot {name} has not connected in {self._wait_s:g} s: it forfeits its "
            "matches (fault handshake) until it connects"
            + (f"; its last hello was rejected: {why}" if why else "")
        )


def advertised_host(listen_host: str, scheduler_address: str) -> str:
    """The address of this machine by which Dask workers reach the listener: ``listen_host``
    unless it means every address (0.0.0.0, ::, *), else the address this machine reaches the
    scheduler from (no packet is sent), else its host name."""
    host = listen_host.removeprefix("tcp://").strip("[]")
    if host not in ("0.0.0.0", "::", "*", ""):
        return host
    target = scheduler_address.split("://", 1)[-1].rsplit(":", 1)[0].strip("[]")
    family = socket.AF_INET6 if ":" in target else socket.AF_INET
    with contextlib.suppress(OSError), socket.socket(family, socket.SOCK_DGRAM) as probe:
        probe.connect((target, 9))
        return str(probe.getsockname()[0])
    return socket.getfqdn()
