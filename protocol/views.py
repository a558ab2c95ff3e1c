"""What a seat is told: wire maps built from the engine's ``observation()`` and nothing else.

These builders produce plain maps (the shapes of :class:`protocol.messages.ObservationInfo`
and the event models) directly, without pydantic, because they run at every decision; the
tests validate their output against the models.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from referee.actions import Action
from referee.game import ExchangeChoices, Observation, Phase

__all__ = ["EventTracker", "decision_kind", "legal_to_wire", "observation_to_wire"]

_DECISIONS = {Phase.EXCHANGE: "exchange", Phase.BIDDING: "bid", Phase.PLAY: "play"}


def decision_kind(seen: Observation) -> str:
    """``"exchange"``, ``"bid"`` or ``"play"``: the kind of decision the phase asks for."""
    return _DECISIONS[seen.phase]


def observation_to_wire(seen: Observation) -> dict[str, Any]:
    """The ``observation`` map of a ``decide`` message."""
    lead = seen.lead
    return {
        "game": seen.game_number,
        "seat": int(seen.seat),
        "role": seen.role.value,
        "master": int(seen.master),
        "hand": [card.code for card in seen.hand],
        "key_card": seen.key_card.code,
        "trump": seen.trump.value,
        "killers": [card.code for card in seen.killers],
        "phase": seen.phase.value,
        "to_move": None if seen.to_move is None else int(seen.to_move),
        "exchange_rounds": [
            {"master": round_.master_count, "slave": round_.slave_count}
            for round_ in seen.exchange_rounds
        ],
        "exchange_stopped": seen.exchange_stopped,
        "master_exchange_count": seen.master_exchange_count,
        "stock_remaining": seen.stock_remaining,
        "master_bid": seen.master_bid,
        "slave_bid": seen.slave_bid,
        "slave_passed": seen.slave_passed,
        "attacker": None if seen.attacker is None else int(seen.attacker),
        "tricks": [
            {
                "leader": int(trick.leader),
                "cards": [trick.lead.code, trick.follow.code],
                "winner": int(trick.winner),
            }
            for trick in seen.tricks
        ],
        "lead": None if lead is None else lead.code,
        "leader": int(seen.leader),
        "tricks_won": list(seen.tricks_won),
        "scores": list(seen.scores),
        "opponent_hand_size": seen.opponent_hand_size,
    }


def legal_to_wire(legal: Sequence[Action]) -> list[str]:
    """The legal actions in text form."""
    if isinstance(legal, ExchangeChoices):
        return legal.texts()
    return [str(action) for action in legal]


class EventTracker:
    """Turns one seat's successive observations into the events between them.

    Feed it every observation the seat is due (at each of its decisions and at each game's
    end) with :meth:`observe`; :meth:`take` returns what happened since the last take. Since
    its only input is the seat's own observations, events can never leak hidden information.
    """

    __slots__ = ("_last", "_pending")

    def __init__(self) -> None:
        self._last: Observation | None = None
        self._pending: list[dict[str, Any]] = []

    def observe(self, seen: Observation) -> None:
        """Record the events between the previous observation and ``seen``."""
        last = self._last
        if last is None or last.game_number != seen.game_number:
            self._pending.append(
                {
                    "event": "game_start",
                    "game": seen.game_number,
                    "master": int(seen.master),
                    "key_card": seen.key_card.code,
                    "hand": [card.code for card in seen.hand],
                    "scores": list(seen.scores),
                }
            )
            last = None
        self._pending.extend(_events_between(last, seen))
        self._last = seen

    def take(self) -> list[dict[str, Any]]:
        """The events recorded since the last call, oldest first."""
        events, self._pending = self._pending, []
        return events


def _plays(seen: Observation) -> list[tuple[int, str]]:
    plays: list[tuple[int, str]] = []
    for trick in seen.tricks:
        plays.append((int(trick.leader), str(trick.lead)))
        plays.append((int(trick.leader.other), str(trick.follow)))
    if seen.lead is not None:
        plays.append((int(seen.leader), str(seen.lead)))
    return plays


def _events_between(last: Observation | None, seen: Observation) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    master, slave = int(seen.master), int(seen.master.other)
    old_rounds = () if last is None else last.exchange_rounds
    for number, round_ in enumerate(seen.exchange_rounds, start=1):
        if number > len(old_rounds):
            events.append(
                {"event": "exchange", "seat": master, "round": number, "count": round_.master_count}
            )
        known = number <= len(old_rounds) and old_rounds[number - 1].slave_count is not None
        if round_.slave_count is not None and not known:
            events.append(
                {"event": "exchange", "seat": slave, "round": number, "count": round_.slave_count}
            )
    if seen.exchange_stopped and not (last is not None and last.exchange_stopped):
        events.append({"event": "stop", "seat": master, "round": len(seen.exchange_rounds) + 1})
    if seen.master_bid is not None and (last is None or last.master_bid is None):
        events.append({"event": "bid", "seat": master, "tricks": seen.master_bid})
    if seen.slave_bid is not None and (last is None or last.slave_bid is None):
        events.append({"event": "bid", "seat": slave, "tricks": seen.slave_bid})
    if seen.slave_passed and not (last is not None and last.slave_passed):
        events.append({"event": "pass", "seat": slave})
    done = 0 if last is None else 2 * len(last.tricks) + (last.lead is not None)
    plays = _plays(seen)
    for index in range(done, len(plays)):
        seat, card = plays[index]
        events.append({"event": "play", "seat": seat, "card": card})
        if index % 2 == 1:
            trick = seen.tricks[index // 2]
            events.append(
                {
                    "event": "trick",
                    "number": index // 2 + 1,
                    "leader": int(trick.leader),
                    "cards": [trick.lead.code, trick.follow.code],
                    "winner": int(trick.winner),
                }
            )
    result = seen.result
    if result is not None and (last is None or last.result is None):
        events.append(
            {
                "event": "game_end",
                "game": seen.game_number,
                "attacker": int(result.attacker),
                "bid": result.bid,
                "tricks_won": list(result.tricks),
                "points": list(result.points),
                "scores": [seen.scores[0] + result.points[0], seen.scores[1] + result.points[1]],
                "promise": result.promise,
                "conquest": result.conquest,
                "save": result.save,
            }
        )
    return events
