"""What a seat is told: wire maps built from the engine's ``observation()`` and nothing else.

These builders produce plain maps (the shapes of :class:`protocol.messages.ObservationInfo`
and the event models) directly, without pydantic, because they run at every decision; the
tests validate their output against the models.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from referee.rules.actions import PLAY_TEXTS, Action, Play
from referee.rules.game import ExchangeChoices, ExchangeRound, Observation, Phase, Trick

__all__ = ["EventTracker", "decision_kind", "legal_to_wire", "observation_to_wire"]

_DECISIONS = {Phase.EXCHANGE: "exchange", Phase.BIDDING: "bid", Phase.PLAY: "play"}
_PLAY = Phase.PLAY


def decision_kind(seen: Observation) -> str:
    """``"exchange"``, ``"bid"`` or ``"play"``: the kind of decision the phase asks for."""
    return _DECISIONS[seen.phase]


def observation_to_wire(seen: Observation) -> dict[str, Any]:
    """The ``observation`` map of a ``decide`` message."""
    return _observation_map(
        seen, _game_fields(seen), _tricks_wire(seen.tricks), _rounds_wire(seen.exchange_rounds)
    )


# The fields of the observation map that stay the same for a seat through a game: game, seat,
# role, master, key card, trump and killers.
_GameFields = tuple[int, int, str, int, str, str, tuple[str, ...]]


def _game_fields(seen: Observation) -> _GameFields:
    return (
        seen.game_number,
        int(seen.seat),
        seen.role._value_,  # ``_value_``: the ``value`` property costs ten times more
        int(seen.master),
        seen.key_card.code,
        seen.trump._value_,
        tuple(card.code for card in seen.killers),
    )


def _trick_wire(trick: Trick) -> dict[str, Any]:
    return {
        "leader": int(trick.leader),
        "cards": [trick.lead.code, trick.follow.code],
        "winner": int(trick.winner),
    }


def _tricks_wire(tricks: Sequence[Trick]) -> list[dict[str, Any]]:
    return [_trick_wire(trick) for trick in tricks]


def _rounds_wire(rounds: Sequence[ExchangeRound]) -> list[dict[str, Any]]:
    return [{"master": round_.master_count, "slave": round_.slave_count} for round_ in rounds]


def _observation_map(
    seen: Observation,
    fields: _GameFields,
    tricks: list[dict[str, Any]],
    rounds: list[dict[str, Any]],
) -> dict[str, Any]:
    game, seat, role, master, key_card, trump, killers = fields
    lead = seen.lead
    to_move = seen.to_move
    attacker = seen.attacker
    return {
        "game": game,
        "seat": seat,
        "role": role,
        "master": master,
        "hand": [card.code for card in seen.hand],
        "key_card": key_card,
        "trump": trump,
        "killers": list(killers),
        "phase": seen.phase._value_,
        "to_move": None if to_move is None else int(to_move),
        "exchange_rounds": rounds,
        "exchange_stopped": seen.exchange_stopped,
        "master_exchange_count": seen.master_exchange_count,
        "stock_remaining": seen.stock_remaining,
        "master_bid": seen.master_bid,
        "slave_bid": seen.slave_bid,
        "slave_passed": seen.slave_passed,
        "attacker": None if attacker is None else int(attacker),
        "tricks": tricks,
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
    if legal and type(legal[0]) is Play:  # the common case, without a call per action
        return [PLAY_TEXTS[action.card.index] for action in legal]  # type: ignore[union-attr]
    return [str(action) for action in legal]


class EventTracker:
    """Turns one seat's successive observations into the events between them.

    Feed it every observation the seat is due (at each of its decisions and at each game's
    end) with :meth:`observe`; :meth:`take` returns what happened since the last take. Since
    its only input is the seat's own observations, events can never leak hidden information.
    """

    __slots__ = ("_fields", "_last", "_pending", "_round_maps", "_rounds", "_trick_maps", "_tricks")

    def __init__(self) -> None:
        self._last: Observation | None = None
        self._pending: list[dict[str, Any]] = []
        # The parts of the seat's observation map built so far in the current game.
        self._fields: _GameFields | None = None
        self._tricks: tuple[Trick, ...] = ()
        self._trick_maps: list[dict[str, Any]] = []
        self._rounds: tuple[ExchangeRound, ...] = ()
        self._round_maps: list[dict[str, Any]] = []

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

    def observation_map(self, seen: Observation) -> dict[str, Any]:
        """The same map as :func:`observation_to_wire`, built faster for a seat's successive
        observations: the fields fixed for a game, the maps of finished tricks and those of
        the exchange rounds are built once. Its lists are its own, but the maps inside them
        are shared with later maps: treat the result as read-only (it is meant to be packed
        and sent)."""
        fields = self._fields
        if (
            fields is None
            or fields[0] != seen.game_number
            or fields[1] != seen.seat
            or fields[3] != seen.master
            or fields[4] != seen.key_card.code
        ):
            fields = self._fields = _game_fields(seen)
            self._tricks = ()
            self._trick_maps = []
        tricks = seen.tricks
        known = self._tricks
        if tricks is not known:
            count = len(known)
            # Tricks only accumulate within a game; the last known one (held here, so its
            # identity cannot be reused) shows whether ``tricks`` extends what was built.
            if count == 0 or (len(tricks) >= count and tricks[count - 1] is known[-1]):
                self._trick_maps.extend(_trick_wire(trick) for trick in tricks[count:])
            else:
                self._trick_maps = _tricks_wire(tricks)
            self._tricks = tricks
        rounds = seen.exchange_rounds
        if rounds is not self._rounds:  # the engine keeps the tuple while no exchange happens
            self._rounds = rounds
            self._round_maps = _rounds_wire(rounds)
        return _observation_map(seen, fields, list(self._trick_maps), list(self._round_maps))


def _events_between(last: Observation | None, seen: Observation) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    # Once play has begun, every exchange, bid and pass has been told: only plays remain.
    if last is None or last.phase is not _PLAY:
        _events_before_play(last, seen, events)
    _play_events(last, seen, events)
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


def _events_before_play(
    last: Observation | None, seen: Observation, events: list[dict[str, Any]]
) -> None:
    """The exchanges, the stop, the bids and the pass since ``last``."""
    master, slave = int(seen.master), int(seen.master.other)
    old_rounds = () if last is None else last.exchange_rounds
    # The engine carries the same tuple forward while no exchange happens.
    rounds = () if seen.exchange_rounds is old_rounds else seen.exchange_rounds
    for number, round_ in enumerate(rounds, start=1):
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


def _play_events(last: Observation | None, seen: Observation, events: list[dict[str, Any]]) -> None:
    """The plays (and finished tricks) since ``last``."""
    # The plays in order: lead and follow of each finished trick, then a lead in progress.
    done = 0 if last is None else 2 * len(last.tricks) + (last.lead is not None)
    tricks = seen.tricks
    lead = seen.lead
    for index in range(done, 2 * len(tricks) + (lead is not None)):
        number = index // 2
        if number == len(tricks):
            assert lead is not None
            events.append({"event": "play", "seat": int(seen.leader), "card": lead.code})
            break
        trick = tricks[number]
        leader = int(trick.leader)
        if index % 2 == 0:
            events.append({"event": "play", "seat": leader, "card": trick.lead.code})
            continue
        events.append({"event": "play", "seat": 1 - leader, "card": trick.follow.code})
        events.append(
            {
                "event": "trick",
                "number": number + 1,
                "leader": leader,
                "cards": [trick.lead.code, trick.follow.code],
                "winner": int(trick.winner),
            }
        )
