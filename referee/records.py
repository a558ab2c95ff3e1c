"""Game records: a versioned JSON Lines format that a program without our code can re-verify.

``docs/records.md`` specifies the format. This module builds record lines as plain dicts,
serialises them deterministically and re-simulates a whole record with the engine
(:func:`verify_lines`). Like the rest of the engine it does no I/O: :mod:`referee.record_files`
reads and writes the files.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NoReturn

from referee.rules.actions import Exchange, action_from_json, action_to_json
from referee.rules.cards import Card, parse_card, sort_cards
from referee.rules.errors import AegisError, RecordError
from referee.rules.game import KEY_CARD_POSITION, GameResult, GameState, Seat, Trick, apply
from referee.rules.match import (
    MatchResult,
    MatchState,
    Termination,
    finish_game,
    first_master,
    forfeit,
    new_match,
    start_game,
)
from referee.rules.options import RulesOptions, parse_rules_options
from referee.selfplay import PlayedMatch

__all__ = [
    "RECORD_FORMAT",
    "RECORD_VERSION",
    "VOID_TERMINATION",
    "Disagreement",
    "VerifyReport",
    "dumps_line",
    "game_line",
    "match_end_line",
    "match_lines",
    "match_start_line",
    "verify_lines",
]

#: A stall shorter than this (ms) is left out of a record: the machine did not stop the bot.
_STALL_WORTH_NOTING_MS = 1.0

#: The ``format`` of every ``match_start`` line: what kind of file this is.
RECORD_FORMAT = "aegis-record"
#: The termination of a match in which both bots failed before the first game (no winner).
VOID_TERMINATION = "void"
#: The record format's version, kept apart from the package version. ``docs/records.md``
#: states the same number; a test checks it.
RECORD_VERSION = 1

_DECK_SIZE = 52
_SEATS = (Seat.FIRST, Seat.SECOND)
_RULE_NAMES = tuple(RulesOptions().to_dict())
_TERMINATIONS = {termination.value: termination for termination in Termination}
# The fields a finished game line adds; a game cut short by a forfeit has none of them.
_RESULT_KEYS = (
    "tricks_won",
    "attacker",
    "bid",
    "master_bid",
    "slave_bid",
    "winner",
    "points",
    "bonuses",
    "scores_after",
)


# ---------------------------------------------------------------------------------------------
# Building records


def _codes(cards: Iterable[Card]) -> list[str]:
    return [card.code for card in cards]


def match_start_line(
    match_number: int, match: MatchState, players: Sequence[str], seed: int | None = None
) -> dict[str, Any]:
    """The ``match_start`` line of a match: format, version, players, rules and the draw."""
    if len(players) != 2 or not all(isinstance(name, str) for name in players):
        raise RecordError(f"a match has two players, seat 0 first; got {players!r}")
    return {
        "type": "match_start",
        "format": RECORD_FORMAT,
        "version": RECORD_VERSION,
        "match": match_number,
        "seed": seed,
        "players": list(players),
        "rules": match.options.to_dict(),
        "first_draw": _codes(match.first_draw),
        "first_master": int(match.first_master),
    }


def game_line(
    match_number: int,
    game: GameState,
    timings: Sequence[float | None] | None = None,
    charges: Sequence[tuple[float, float] | None] | None = None,
) -> dict[str, Any]:
    """The ``game`` line of a finished game, or of one cut short by a forfeit.

    ``timings`` optionally gives each action's decision time in milliseconds (None where
    unknown), in the order of ``game.history``; ``charges``, likewise, the CPU milliseconds
    charged and the milliseconds the machine stalled the seat, of actions on the CPU clock.
    """
    for what, values in (("timings", timings), ("charges", charges)):
        if values is not None and len(values) != len(game.history):
            raise RecordError(
                f"game {game.game_number}: {len(values)} {what} for {len(game.history)} actions"
            )
    actions: list[dict[str, Any]] = []
    for index, turn in enumerate(game.history):
        entry: dict[str, Any] = {"seat": int(turn.seat), **action_to_json(turn.action)}
        if isinstance(turn.action, Exchange):
            entry["drawn"] = _codes(turn.drawn)
        if timings is not None and timings[index] is not None:
            entry["ms"] = timings[index]
        charge = None if charges is None else charges[index]
        if charge is not None:
            entry["cpu_ms"] = charge[0]
            if charge[1] >= _STALL_WORTH_NOTING_MS:
                entry["stall_ms"] = charge[1]
        actions.append(entry)
    line: dict[str, Any] = {
        "type": "game",
        "match": match_number,
        "game": game.game_number,
        "master": int(game.master),
        "scores_before": list(game.scores_before),
        "deck": _codes(game.deck),
        "actions": actions,
        "tricks": [
            {
                "leader": int(trick.leader),
                "cards": [trick.lead.code, trick.follow.code],
                "winner": int(trick.winner),
            }
            for trick in game.tricks
        ],
        "finished": game.result is not None,
    }
    result = game.result
    if result is not None:
        line.update(
            tricks_won=list(result.tricks),
            attacker=int(result.attacker),
            bid=result.bid,
            master_bid=result.master_bid,
            slave_bid=game.slave_bid,
            winner=int(result.winner),
            points=list(result.points),
            bonuses={"promise": result.promise, "conquest": result.conquest, "save": result.save},
            scores_after=[
                game.scores_before[0] + result.points[0],
                game.scores_before[1] + result.points[1],
            ],
        )
    return line


def match_end_line(
    match_number: int,
    result: MatchResult,
    forfeit_fault: Mapping[str, Any] | None = None,
    faults: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The ``match_end`` line: the winner and how the match ended.

    A forfeit needs ``forfeit_fault``, the JSON object of its cause (``seat``, ``fault`` and
    optionally ``detail``, ``game``, ``decision``); ``faults`` lists other faults counted
    during the match in the same form (the line has no ``faults`` field when there are none).
    """
    is_forfeit = result.termination is Termination.FORFEIT
    if is_forfeit != (forfeit_fault is not None):
        raise RecordError("a forfeit, and only a forfeit, states its fault in a match_end line")
    if forfeit_fault is not None and forfeit_fault.get("seat") != result.loser:
        raise RecordError(
            f"the forfeit names seat {forfeit_fault.get('seat')!r} but {result.loser} lost"
        )
    line: dict[str, Any] = {
        "type": "match_end",
        "match": match_number,
        "winner": int(result.winner),
        "termination": result.termination.value,
        "scores": list(result.scores),
        "games": result.games,
    }
    if forfeit_fault is not None:
        line["forfeit"] = dict(forfeit_fault)
    if faults:
        line["faults"] = [dict(fault) for fault in faults]
    return line


def match_lines(
    played: PlayedMatch, players: Sequence[str], match_number: int = 1
) -> list[dict[str, Any]]:
    """Every line of a match played in-process: ``match_start``, one per game, ``match_end``."""
    if played.match.result is None:
        raise RecordError(f"match {match_number} is not over")
    return [
        match_start_line(match_number, played.match, players, played.seed),
        *(game_line(match_number, game) for game in played.games),
        match_end_line(match_number, played.match.result),
    ]


def dumps_line(line: dict[str, Any]) -> str:
    """One record line as compact JSON text without the newline; same input, same bytes."""
    # Insertion order, no spaces and raw UTF-8 make the bytes a function of the content, so
    # equal seeds give byte-identical files. NaN and infinity are not JSON: refuse them.
    return json.dumps(line, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


# ---------------------------------------------------------------------------------------------
# Verifying records


@dataclass(frozen=True, slots=True)
class Disagreement:
    """The first point where a record and the engine disagree, and where it is."""

    line: int
    reason: str
    match: int | None = None
    game: int | None = None
    #: 1-based index into the game's ``actions``.
    action: int | None = None
    #: The action as text with its seat, e.g. ``"seat 1 play 7H"``, once it parsed.
    action_text: str | None = None

    @property
    def location(self) -> str:
        """Where in the record: ``"match 3, game 2, action 7 (seat 1 play 7H)"``, or ``""``."""
        parts = []
        if self.match is not None:
            parts.append(f"match {self.match}")
        if self.game is not None:
            parts.append(f"game {self.game}")
        if self.action is not None:
            parts.append(f"action {self.action}")
            if self.action_text is not None:
                parts[-1] += f" ({self.action_text})"
        return ", ".join(parts)

    def __str__(self) -> str:
        location = self.location
        return f"{location}: {self.reason}" if location else self.reason


@dataclass(frozen=True, slots=True)
class VerifyReport:
    """What :func:`verify_lines` checked, and the first disagreement if there is one.

    The counts cover what was verified before any disagreement.
    """

    matches: int
    games: int
    actions: int
    disagreement: Disagreement | None

    @property
    def ok(self) -> bool:
        """True if the whole record agrees with the engine."""
        return self.disagreement is None


def verify_lines(lines: Iterable[tuple[int, str | bytes]]) -> VerifyReport:
    """Re-simulate a record given as (line number, line text) pairs and report the first
    disagreement with the engine.

    Never raises for bad input: malformed JSON, missing fields and wrong types are
    disagreements like any other. Lines may keep their line terminator.
    """
    verifier = _Verifier()
    try:
        for number, text in lines:
            verifier.line = number
            verifier.check_line(text)
        verifier.check_end()  # reported on the last line, or line 0 for an empty record
    except AegisError as error:  # every record and rules error derives from it
        return verifier.report(str(error))
    return verifier.report(None)


def _fail(reason: str) -> NoReturn:
    raise RecordError(reason)


def _show(value: object) -> str:
    """A short JSON rendering of a bad value for a message."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON value")


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"duplicate key {key!r}")
        result[key] = value
    return result


def _parse_json(text: str | bytes) -> dict[str, Any]:
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as error:
            _fail(f"line is not valid UTF-8 (byte {error.start + 1})")
    if not text.strip():
        _fail("empty line (every line of a record is one JSON object)")
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_unique_keys)
    except RecursionError:
        _fail("line is not valid JSON: nested too deeply")
    except json.JSONDecodeError as error:
        # Its own message counts lines inside the text, which is one line of the record.
        _fail(f"line is not valid JSON: {error.msg} at column {error.colno}")
    except ValueError as error:  # our hooks' errors, over-long integers
        _fail(f"line is not valid JSON: {error}")
    if not isinstance(value, dict):
        _fail(f"a record line must be a JSON object, got {_show(value)}")
    return value


def _field(data: Mapping[str, Any], key: str, what: str) -> Any:
    if key not in data:
        _fail(f"{what} has no {key!r} field")
    return data[key]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _int_field(data: Mapping[str, Any], key: str, what: str, low: int = 0) -> int:
    value = _field(data, key, what)
    if not _is_int(value) or value < low:
        _fail(f"{what}: {key!r} must be an integer >= {low}, got {_show(value)}")
    return int(value)


def _optional_int_field(data: Mapping[str, Any], key: str, what: str, low: int = 0) -> int | None:
    if data.get(key) is None:
        _field(data, key, what)  # present and null is fine; absent is not
        return None
    return _int_field(data, key, what, low)


def _seat_field(data: Mapping[str, Any], key: str, what: str) -> Seat:
    value = _field(data, key, what)
    if not _is_int(value) or value not in (0, 1):
        _fail(f"{what}: {key!r} must be a seat, 0 or 1, got {_show(value)}")
    return _SEATS[value]


def _bool_field(data: Mapping[str, Any], key: str, what: str) -> bool:
    value = _field(data, key, what)
    if not isinstance(value, bool):
        _fail(f"{what}: {key!r} must be true or false, got {_show(value)}")
    return value


def _str_field(data: Mapping[str, Any], key: str, what: str) -> str:
    value = _field(data, key, what)
    if not isinstance(value, str):
        _fail(f"{what}: {key!r} must be a string, got {_show(value)}")
    return value


def _object_field(data: Mapping[str, Any], key: str, what: str) -> dict[str, Any]:
    value = _field(data, key, what)
    if not isinstance(value, dict):
        _fail(f"{what}: {key!r} must be an object, got {_show(value)}")
    return value


def _list_field(
    data: Mapping[str, Any], key: str, what: str, length: int | None = None
) -> list[Any]:
    value = _field(data, key, what)
    if not isinstance(value, list) or (length is not None and len(value) != length):
        size = "a list" if length is None else f"a list of {length}"
        _fail(f"{what}: {key!r} must be {size}, got {_show(value)}")
    return value


def _pair_field(data: Mapping[str, Any], key: str, what: str) -> tuple[int, int]:
    value = _list_field(data, key, what, 2)
    if not all(_is_int(item) and item >= 0 for item in value):
        _fail(f"{what}: {key!r} must be two integers >= 0, seat 0 first, got {_show(value)}")
    return value[0], value[1]


def _cards_field(
    data: Mapping[str, Any], key: str, what: str, length: int | None = None
) -> tuple[Card, ...]:
    codes = _list_field(data, key, what, length)
    cards = []
    for position, code in enumerate(codes):
        try:
            cards.append(parse_card(code))
        except AegisError as error:
            _fail(f"{what}: {key!r}[{position}]: {error}")
    return tuple(cards)


def _text(cards: Iterable[Card]) -> str:
    return " ".join(card.code for card in cards) or "none"


def _seat_list(values: Sequence[int]) -> str:
    return f"[{values[0]}, {values[1]}]"


def _trick_rule(trick: Trick, key_card: Card) -> str:
    """Why the engine gives ``trick`` to its winner, citing the trick rules."""
    lead, follow = trick.lead, trick.follow
    if follow.suit is lead.suit:
        stronger, weaker = (follow, lead) if trick.winner != trick.leader else (lead, follow)
        return f"both {lead.suit.letter}: {stronger} beats {weaker}"
    if follow.suit is key_card.suit:
        return f"{follow} trumps a non-trump lead"
    if lead.suit is key_card.suit and follow.rank == key_card.rank:
        return f"{follow} is a killer on a trump lead"
    return f"{follow} neither follows {lead.suit.letter}, trumps nor kills a trump lead"


def _scoring(result: GameResult, options: RulesOptions) -> str:
    """How the engine scored a game, for a message about points or bonuses."""
    attacker = result.attacker
    taken = result.tricks[attacker]
    made = "made" if result.attacker_won else "missed"
    text = f"{attacker} attacked with bid {result.bid}, took {taken} and {made} it"
    notes = []
    if result.promise:
        notes.append("promise +1")
    elif result.attacker_won and taken == result.bid:
        notes.append(f"no promise below bid {options.promise_min_bid} (D5)")
    if result.conquest:
        notes.append("conquest +1")
    if result.save:
        notes.append(f"save: the defender scores the master's bid {result.master_bid}")
    return text + (f"; {', '.join(notes)}" if notes else "")


class _Verifier:
    """Walks a record line by line, keeping the engine's view of the match in progress."""

    def __init__(self) -> None:
        self.line = 0
        self.matches = 0
        self.games = 0
        self.actions = 0
        # Where the current line is, for the report.
        self.match_number: int | None = None
        self.game_number: int | None = None
        self.action_index: int | None = None
        self.action_text: str | None = None
        # The match in progress: None between a match_end and the next match_start.
        self.match: MatchState | None = None
        # The number of a game cut short (finished: false): only a forfeit may follow it.
        self.unfinished: int | None = None

    def report(self, reason: str | None) -> VerifyReport:
        disagreement = None
        if reason is not None:
            disagreement = Disagreement(
                self.line,
                reason,
                self.match_number,
                self.game_number,
                self.action_index,
                self.action_text,
            )
        return VerifyReport(self.matches, self.games, self.actions, disagreement)

    def check_line(self, text: str | bytes) -> None:
        self.game_number = self.action_index = None
        self.action_text = None
        data = _parse_json(text)
        kind = _str_field(data, "type", "record line")
        if kind == "match_start":
            self.check_match_start(data)
            return
        if kind not in ("game", "match_end"):
            _fail(f"unknown line type {kind!r} (expected match_start, game or match_end)")
        match = self.match
        if match is None:
            self.match_number = None
            _fail(f"a {kind} line outside a match: expected a match_start line")
        number = _int_field(data, "match", f"{kind} line", 1)
        if number != self.match_number:
            _fail(f"{kind} line of match {number} inside match {self.match_number}")
        if kind == "game":
            self.check_game(data, match)
        else:
            self.check_match_end(data, match)

    def check_end(self) -> None:
        self.game_number = self.action_index = None
        self.action_text = None
        if self.match is not None:
            _fail(f"the record ends inside match {self.match_number}: no match_end line")
        if self.matches == 0:
            _fail("the record holds no match")

    def check_match_start(self, data: Mapping[str, Any]) -> None:
        if self.match is not None:
            _fail(f"match {self.match_number} has no match_end line before the next match_start")
        what = "match_start line"
        self.match_number = None
        record_format = _str_field(data, "format", what)
        if record_format != RECORD_FORMAT:
            _fail(f"format is {record_format!r}, not {RECORD_FORMAT!r}: not an Aegis record")
        version = _field(data, "version", what)
        if version != RECORD_VERSION or not _is_int(version):
            _fail(
                f"record version {_show(version)} is not supported "
                f"(this verifier reads version {RECORD_VERSION})"
            )
        number = _int_field(data, "match", what, 1)
        self.match_number = number
        if number != self.matches + 1:
            _fail(f"match number {number} out of order: expected match {self.matches + 1}")
        seed = _field(data, "seed", what)
        if seed is not None and not _is_int(seed):
            _fail(f"{what}: 'seed' must be an integer or null, got {_show(seed)}")
        players = _list_field(data, "players", what, 2)
        if not all(isinstance(name, str) for name in players):
            _fail(f"{what}: 'players' must be two names, seat 0 first, got {_show(players)}")
        rules = _object_field(data, "rules", what)
        missing = [name for name in _RULE_NAMES if name not in rules]
        if missing:
            # A record states every option it was played under; defaults are not assumed.
            _fail(f"{what}: 'rules' lacks {', '.join(missing)}")
        options = parse_rules_options(rules)
        draw = _cards_field(data, "first_draw", what, 2)
        claimed = _seat_field(data, "first_master", what)
        winner = first_master((draw[0], draw[1]))
        if claimed != winner:
            _fail(
                f"first_master is {claimed} but {winner} wins the draw "
                f"{draw[0]} (seat 0) against {draw[1]} (seat 1) (D1)"
            )
        self.match = new_match(options, (draw[0], draw[1]))
        self.unfinished = None

    def check_game(self, data: Mapping[str, Any], match: MatchState) -> None:
        what = "game line"
        number = _int_field(data, "game", what, 1)
        self.game_number = number
        if self.unfinished is not None:
            _fail(f"game {self.unfinished} was cut short, so no game can follow it")
        if match.result is not None:
            _fail(
                f"the match was over after game {match.games_played} "
                f"({match.result.termination.value}, {match.result.winner} won): "
                "expected its match_end line"
            )
        expected = match.games_played + 1
        if number != expected:
            _fail(f"game number {number} out of order: expected game {expected}")
        master = _seat_field(data, "master", what)
        if master != match.next_master:
            _fail(
                f"master is {master} but should be {match.next_master}: "
                f"{match.first_master} won the first draw and the master alternates every game"
            )
        scores_before = _pair_field(data, "scores_before", what)
        if scores_before != match.scores:
            _fail(
                f"scores_before {_seat_list(scores_before)} but the running scores are "
                f"{_seat_list(match.scores)}"
            )
        deck = _cards_field(data, "deck", what, _DECK_SIZE)
        if len(set(deck)) != _DECK_SIZE:
            twice = sort_cards(card for card, count in Counter(deck).items() if count > 1)
            _fail(f"the deck holds {_text(twice)} more than once")
        state = self.check_actions(start_game(match, deck), _list_field(data, "actions", what))
        finished = _bool_field(data, "finished", what)
        if finished and state.result is None:
            _fail(
                f"finished is true but the game is not over after its actions: "
                f"{state.to_move} is to move in the {state.phase.value} phase"
            )
        if not finished and state.result is not None:
            _fail("finished is false but the actions complete the game")
        self.check_tricks(state, _list_field(data, "tricks", what))
        if state.result is None:
            present = [key for key in _RESULT_KEYS if key in data]
            if present:
                _fail(f"a game cut short has no result, but the line has {', '.join(present)}")
            self.unfinished = number
        else:
            self.check_result(data, state, state.result)
            self.match = finish_game(match, state)
        self.games += 1

    def check_actions(self, state: GameState, actions: list[Any]) -> GameState:
        for index, entry in enumerate(actions, 1):
            self.action_index = index
            self.action_text = None
            if not isinstance(entry, dict):
                _fail(f"an action must be an object, got {_show(entry)}")
            seat = _seat_field(entry, "seat", "action")
            _str_field(entry, "action", "action")
            action = action_from_json(entry)
            self.action_text = f"{seat} {action}"
            state = apply(state, seat, action)
            if isinstance(action, Exchange):
                drawn = _cards_field(entry, "drawn", "exchange")
                expected = state.history[-1].drawn
                if drawn != expected:
                    _fail(
                        f"drawn {_text(drawn)}, but exchanging {len(expected)} card(s) draws "
                        f"{_text(expected)} from the top of the stock"
                    )
            elif "drawn" in entry:
                _fail(f"only an exchange draws cards, yet this {entry['action']} has 'drawn'")
            for key in ("ms", "cpu_ms", "stall_ms"):
                milliseconds = entry.get(key)
                if key in entry and (
                    not isinstance(milliseconds, int | float)
                    or isinstance(milliseconds, bool)
                    or not math.isfinite(milliseconds)
                    or milliseconds < 0
                ):
                    _fail(
                        f"'{key}' must be a number of milliseconds >= 0, got {_show(milliseconds)}"
                    )
            self.actions += 1
        self.action_index = None
        self.action_text = None
        return state

    def check_tricks(self, state: GameState, tricks: list[Any]) -> None:
        key_card = state.deck[KEY_CARD_POSITION]
        for number, (entry, trick) in enumerate(zip(tricks, state.tricks, strict=False), 1):
            what = f"trick {number}"
            if not isinstance(entry, dict):
                _fail(f"{what} must be an object, got {_show(entry)}")
            leader = _seat_field(entry, "leader", what)
            cards = _cards_field(entry, "cards", what, 2)
            winner = _seat_field(entry, "winner", what)
            if leader != trick.leader:
                _fail(f"{what}: leader is {leader} but {trick.leader} led it")
            if cards != (trick.lead, trick.follow):
                _fail(
                    f"{what}: cards are {_text(cards)} but the actions played "
                    f"{trick.lead} {trick.follow}"
                )
            if winner != trick.winner:
                _fail(
                    f"{what}: winner is {winner} but {trick.winner} wins it "
                    f"({_trick_rule(trick, key_card)}; trump {key_card.suit.letter})"
                )
        if len(tricks) != len(state.tricks):
            _fail(f"{len(tricks)} tricks listed but the actions make {len(state.tricks)}")

    def check_result(self, data: Mapping[str, Any], state: GameState, result: GameResult) -> None:
        what = "game line"
        tricks_won = _pair_field(data, "tricks_won", what)
        if tricks_won != result.tricks:
            _fail(
                f"tricks_won {_seat_list(tricks_won)} but the tricks give "
                f"{_seat_list(result.tricks)}"
            )
        attacker = _seat_field(data, "attacker", what)
        master_bid = _int_field(data, "master_bid", what, 1)
        slave_bid = _optional_int_field(data, "slave_bid", what, 1)
        contract = _int_field(data, "bid", what, 1)
        winner = _seat_field(data, "winner", what)
        expected_slave_bid = state.slave_bid
        bids = f"the master ({state.master}) bid {result.master_bid} and the slave " + (
            "passed" if expected_slave_bid is None else f"bid {expected_slave_bid}"
        )
        if master_bid != result.master_bid or slave_bid != expected_slave_bid:
            _fail(f"master_bid {master_bid}, slave_bid {_show(slave_bid)} but {bids}")
        if attacker != result.attacker or contract != result.bid:
            _fail(
                f"attacker {attacker} with bid {contract}, but {bids}: "
                f"{result.attacker} attacks with bid {result.bid}"
            )
        if winner != result.winner:
            _fail(
                f"winner is {winner} but {result.winner} wins the game "
                f"({_scoring(result, state.options)})"
            )
        points = _pair_field(data, "points", what)
        if points != result.points:
            _fail(
                f"points {_seat_list(points)} but the engine scores {_seat_list(result.points)} "
                f"({_scoring(result, state.options)})"
            )
        bonuses = _object_field(data, "bonuses", what)
        for name, awarded in (
            ("promise", result.promise),
            ("conquest", result.conquest),
            ("save", result.save),
        ):
            if _bool_field(bonuses, name, "bonuses") != awarded:
                _fail(
                    f"bonuses: {name} is {'false' if awarded else 'true'} but the engine "
                    f"{'awards' if awarded else 'does not award'} it "
                    f"({_scoring(result, state.options)})"
                )
        scores_after = _pair_field(data, "scores_after", what)
        expected = (
            state.scores_before[0] + result.points[0],
            state.scores_before[1] + result.points[1],
        )
        if scores_after != expected:
            _fail(
                f"scores_after {_seat_list(scores_after)} but scores_before plus points "
                f"make {_seat_list(expected)}"
            )

    def check_match_end(self, data: Mapping[str, Any], match: MatchState) -> None:
        what = "match_end line"
        name = _str_field(data, "termination", what)
        if name == VOID_TERMINATION:
            self.check_void_end(data, match)
            self.close_match()
            return
        termination = _TERMINATIONS.get(name)
        if termination is None:
            _fail(f"{what}: unknown termination {name!r} (expected {', '.join(_TERMINATIONS)})")
        winner = _seat_field(data, "winner", what)
        scores = _pair_field(data, "scores", what)
        games = _int_field(data, "games", what)
        if "faults" in data:
            for position, entry in enumerate(_list_field(data, "faults", what)):
                _parse_fault(entry, f"faults[{position}]")
        if termination is Termination.FORFEIT:
            offender = _parse_fault(_field(data, "forfeit", what), "forfeit")
            if match.result is not None:
                _fail(
                    f"the match had already ended by {match.result.termination.value} "
                    f"after game {match.games_played}: it cannot end by forfeit"
                )
            expected = _forfeit_result(match, offender)
            if winner != expected.winner:
                _fail(f"winner is {winner} but {offender} forfeited")
        else:
            if "forfeit" in data:
                _fail(f"only a forfeit states 'forfeit' details, not a {name} ending")
            if self.unfinished is not None:
                _fail(f"game {self.unfinished} was cut short: only a forfeit can end the match")
            if match.result is None:
                options = match.options
                _fail(
                    f"the match is not over after game {match.games_played}: scores "
                    f"{_seat_list(match.scores)}, target {options.target_score}, cold margin "
                    f"{options.cold_margin}"
                )
            expected = match.result
            if termination is not expected.termination:
                _fail(
                    f"termination is {name!r} but the match ends by "
                    f"{expected.termination.value!r} after game {expected.games} with scores "
                    f"{_seat_list(expected.scores)}"
                )
            if winner != expected.winner:
                _fail(
                    f"winner is {winner} but {expected.winner} wins "
                    f"by {expected.termination.value} with scores {_seat_list(expected.scores)}"
                )
        if scores != expected.scores:
            _fail(
                f"scores {_seat_list(scores)} but the games add up to {_seat_list(expected.scores)}"
            )
        if games != expected.games:
            _fail(f"games is {games} but the match has {expected.games} finished game(s)")
        self.close_match()

    def check_void_end(self, data: Mapping[str, Any], match: MatchState) -> None:
        """A void match: both bots failed before the first game, so no game, no winner, no
        points, and the fault of each seat named."""
        what = "match_end line"
        if match.games_played or self.unfinished is not None:
            _fail("only a match with no game played can be void")
        winner = _field(data, "winner", what)
        if winner is not None:
            _fail(f"a void match has no winner, got {_show(winner)}")
        if "forfeit" in data:
            _fail("only a forfeit states 'forfeit' details, not a void ending")
        scores = _pair_field(data, "scores", what)
        if scores != (0, 0):
            _fail(f"scores {_seat_list(scores)} but a void match plays no game: [0, 0]")
        games = _int_field(data, "games", what)
        if games != 0:
            _fail(f"games is {games} but a void match plays no game")
        faults = _list_field(data, "faults", what)
        seats = [_parse_fault(entry, f"faults[{n}]") for n, entry in enumerate(faults)]
        if sorted(seats) != list(_SEATS):
            named = ", ".join(str(int(seat)) for seat in seats) or "none"
            _fail(f"a void match names one fault for each seat, 0 and 1; got seats {named}")

    def close_match(self) -> None:
        """The match_end line checked out: count the match and expect the next one."""
        self.matches += 1
        self.match = None
        self.unfinished = None


def _forfeit_result(match: MatchState, offender: Seat) -> MatchResult:
    result = forfeit(match, offender).result
    if result is None:  # forfeit() always decides the match; this only narrows the type
        raise RecordError("forfeit left the match undecided")
    return result


def _parse_fault(entry: object, what: str) -> Seat:
    """Check a fault object's fields and return the seat at fault."""
    if not isinstance(entry, dict):
        _fail(f"{what} must be an object, got {_show(entry)}")
    seat = _seat_field(entry, "seat", what)
    _str_field(entry, "fault", what)
    if "detail" in entry:
        _str_field(entry, "detail", what)
    for key in ("game", "decision"):
        if key in entry:
            _optional_int_field(entry, key, what, 1)
    return seat
