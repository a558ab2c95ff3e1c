"""Game records: building lines, deterministic text, and re-verification with the engine."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from referee.faults import Fault, FaultKind
from referee.records import (
    RECORD_FORMAT,
    RECORD_VERSION,
    Disagreement,
    VerifyReport,
    dumps_line,
    game_line,
    match_end_line,
    match_lines,
    match_start_line,
    verify_lines,
)
from referee.rules.actions import Exchange
from referee.rules.errors import RecordError
from referee.rules.game import GameState, Seat, apply, new_game
from referee.rules.match import (
    MatchState,
    Termination,
    draw_first_master,
    finish_game,
    forfeit,
    new_match,
)
from referee.rules.options import RulesOptions
from referee.runner import MatchReport
from referee.selfplay import PlayedMatch
from referee.selfplay_runs import play_selfplay

ROOT = Path(__file__).resolve().parents[2]
GOLDEN_DIRECTORY = ROOT / "tests" / "golden"
DOCS = ROOT / "docs" / "records.md"

DEFAULTS = RulesOptions()

Line = dict[str, Any]


# ---------------------------------------------------------------------------------------------
# Builders


@cache
def _played(
    seed: int = 7,
    matches: int = 3,
    policies: tuple[str, str] = ("random", "random"),
    options: RulesOptions = DEFAULTS,
) -> tuple[PlayedMatch, ...]:
    return tuple(play_selfplay(matches=matches, seed=seed, policies=policies, options=options))


def _lines(
    played: Sequence[PlayedMatch], policies: Sequence[str] = ("random", "random")
) -> list[Line]:
    return [
        line for number, one in enumerate(played, 1) for line in match_lines(one, policies, number)
    ]


@cache
def _standard_text() -> tuple[str, ...]:
    return tuple(dumps_line(line) for line in _lines(_played()))


@pytest.fixture
def record() -> list[Line]:
    """A fresh, mutable copy of a three-match record (seed 7, random against random)."""
    return [json.loads(text) for text in _standard_text()]


def _verify(lines: Sequence[Line | str | bytes]) -> VerifyReport:
    texts = [line if isinstance(line, str | bytes) else dumps_line(line) for line in lines]
    return verify_lines(enumerate(texts, 1))


def _disagreement(lines: Sequence[Line | str | bytes]) -> Disagreement:
    report = _verify(lines)
    assert report.disagreement is not None, "the record was expected to disagree"
    return report.disagreement


def _index(record: list[Line], match: int, game: int | None = None, kind: str = "game") -> int:
    """The list index of a match's line: its game ``game``, or its match_start/match_end."""
    for position, line in enumerate(record):
        if line["match"] == match and line["type"] == kind and line.get("game") == game:
            return position
    raise AssertionError(f"no {kind} line for match {match}, game {game}")


def _replay(game_number: int, actions: int) -> GameState:
    """Game ``game_number`` of the standard record's match 1, cut after ``actions`` actions."""
    finished = _played()[0].games[game_number - 1]
    state = new_game(
        finished.options,
        finished.master,
        finished.deck,
        game_number=finished.game_number,
        scores_before=finished.scores_before,
    )
    for turn in finished.history[:actions]:
        state = apply(state, turn.seat, turn.action)
    return state


def _match_after(played: PlayedMatch, games: int) -> MatchState:
    match = new_match(played.match.options, played.match.first_draw)
    for game in played.games[:games]:
        match = finish_game(match, game)
    return match


def _forfeit_record(
    *, finished_games: int, cut_after: int | None, offender: Seat = Seat.SECOND
) -> list[Line]:
    """Match 1 of the standard record ended by a forfeit after ``finished_games`` games and,
    if ``cut_after`` is given, a next game cut short after that many actions."""
    played = _played()[0]
    assert len(played.games) > finished_games
    lines: list[Line] = [match_start_line(1, played.match, ("random", "random"), played.seed)]
    lines += [game_line(1, game) for game in played.games[:finished_games]]
    fault: dict[str, Any] = {"seat": int(offender), "fault": "timeout", "detail": "no reply"}
    if cut_after is not None:
        cut = _replay(finished_games + 1, cut_after)
        lines.append(game_line(1, cut))
        fault |= {"game": finished_games + 1, "decision": cut_after + 1}
    result = forfeit(_match_after(played, finished_games), offender).result
    assert result is not None
    lines.append(match_end_line(1, result, fault))
    return lines


# ---------------------------------------------------------------------------------------------
# Building and writing lines


def test_dumps_line_is_compact_in_insertion_order_and_raw_utf8() -> None:
    assert (
        dumps_line({"type": "x", "b": [1, None], "a": "Æ♠"}) == '{"type":"x","b":[1,null],"a":"Æ♠"}'
    )


def test_dumps_line_refuses_nan() -> None:
    with pytest.raises(ValueError, match="JSON"):
        dumps_line({"ms": float("nan")})


def test_round_trip_through_json_is_byte_identical() -> None:
    for text in _standard_text():
        assert dumps_line(json.loads(text)) == text


def test_same_seed_same_bytes_other_seed_other_bytes() -> None:
    again = [
        dumps_line(line)
        for line in _lines(
            tuple(
                play_selfplay(
                    matches=3, seed=7, policies=("random", "random"), options=RulesOptions()
                )
            )
        )
    ]
    assert again == list(_standard_text())
    other = [dumps_line(line) for line in _lines(_played(seed=8))]
    assert other != list(_standard_text())


def test_match_start_line_states_format_rules_and_draw() -> None:
    played = _played(options=RulesOptions(promise_min_bid=4), matches=1)[0]
    line = match_start_line(5, played.match, ("ann", "bob"), played.seed)
    assert list(line) == [
        "type",
        "format",
        "version",
        "match",
        "seed",
        "players",
        "rules",
        "first_draw",
        "first_master",
    ]
    assert line["format"] == RECORD_FORMAT
    assert line["version"] == RECORD_VERSION
    assert line["match"] == 5
    assert line["seed"] == played.seed
    assert line["players"] == ["ann", "bob"]
    assert line["rules"] == {
        "target_score": 25,
        "cold_margin": 10,
        "promise_min_bid": 4,
        "max_exchange_rounds": 4,
    }
    assert line["first_draw"] == [card.code for card in played.match.first_draw]
    assert line["first_master"] == played.match.first_master


def test_match_start_line_needs_two_player_names() -> None:
    played = _played()[0]
    with pytest.raises(RecordError, match="two players"):
        match_start_line(1, played.match, ("solo",))


def test_game_line_makes_deal_draws_and_result_explicit() -> None:
    played = _played()[0]
    for game in played.games:
        line = game_line(1, game)
        deck = line["deck"]
        assert deck == [card.code for card in game.deck]
        dealt = new_game(game.options, game.master, game.deck)
        assert sorted(deck[0:5]) == sorted(card.code for card in dealt.hands[game.master])
        assert sorted(deck[5:10]) == sorted(card.code for card in dealt.hands[game.slave])
        assert deck[10] == game.key_card.code
        # Every draw comes off the top of the stock, in order, from position 11.
        drawn = [code for action in line["actions"] for code in action.get("drawn", [])]
        assert drawn == deck[11 : 11 + len(drawn)]
        for action, turn in zip(line["actions"], game.history, strict=True):
            assert action["seat"] == turn.seat
            assert ("drawn" in action) == isinstance(turn.action, Exchange)
        assert [trick["cards"] for trick in line["tricks"]] == [
            [trick.lead.code, trick.follow.code] for trick in game.tricks
        ]
        result = game.result
        assert result is not None
        assert line["finished"] is True
        assert line["points"] == list(result.points)
        assert line["winner"] == result.winner
        assert line["scores_after"] == [
            game.scores_before[seat] + result.points[seat] for seat in (0, 1)
        ]


def test_game_line_writes_decision_times_where_known() -> None:
    game = _played()[0].games[0]
    timings: list[float | None] = [None] * len(game.history)
    timings[0], timings[-1] = 12.5, 3
    line = game_line(1, game, timings)
    assert line["actions"][0]["ms"] == 12.5
    assert line["actions"][-1]["ms"] == 3
    assert all("ms" not in action for action in line["actions"][1:-1])
    with pytest.raises(RecordError, match="timings"):
        game_line(1, game, timings[:-1])


def test_decision_times_play_no_part_in_verification(record: list[Line]) -> None:
    for line in record:
        for position, action in enumerate(line.get("actions", [])):
            action["ms"] = position * 1.5
    assert _verify(record).ok


def test_match_end_line_states_forfeit_details_only_for_a_forfeit() -> None:
    played = _played()[0]
    assert played.match.result is not None
    with pytest.raises(RecordError, match="only a forfeit"):
        match_end_line(1, played.match.result, {"seat": 0, "fault": "crash"})
    lost = forfeit(_match_after(played, 1), Seat.FIRST).result
    assert lost is not None
    with pytest.raises(RecordError, match="only a forfeit"):
        match_end_line(1, lost)
    with pytest.raises(RecordError, match="lost"):
        match_end_line(1, lost, {"seat": 1, "fault": "crash"})
    line = match_end_line(1, lost, {"seat": 0, "fault": "crash"}, [{"seat": 1, "fault": "x"}])
    assert line["forfeit"] == {"seat": 0, "fault": "crash"}
    assert line["faults"] == [{"seat": 1, "fault": "x"}]
    assert line["termination"] == "forfeit"
    assert line["winner"] == 1


# ---------------------------------------------------------------------------------------------
# Verifying: records that agree


def test_fresh_record_verifies_with_counts() -> None:
    played = _played()
    report = _verify(list(_standard_text()))
    assert report.ok, report.disagreement
    assert report.matches == 3
    assert report.games == sum(len(one.games) for one in played)
    assert report.actions == sum(len(game.history) for one in played for game in one.games)


@pytest.mark.parametrize(
    ("policies", "options"),
    [
        (("first", "random"), RulesOptions(max_exchange_rounds=0)),
        (("random", "first"), RulesOptions(promise_min_bid=4, cold_margin=3)),
        (("random", "random"), RulesOptions(target_score=60, cold_margin=40)),
    ],
)
def test_records_under_other_rules_and_policies_verify(
    policies: tuple[str, str], options: RulesOptions
) -> None:
    lines = _lines(_played(seed=3, matches=4, policies=policies, options=options), policies)
    assert lines[0]["rules"] == options.to_dict()
    assert _verify(lines).ok


def test_both_over_target_ends_by_the_game_winner_d7() -> None:
    policies = ("first", "random")
    played = _played(seed=20, matches=1, policies=policies, options=RulesOptions(target_score=3))
    result = played[0].match.result
    assert result is not None
    assert result.termination is Termination.BOTH_OVER_TARGET
    lines = _lines(played, policies)
    assert _verify(lines).ok
    lines[-1]["termination"] = "target"
    found = _disagreement(lines)
    assert "termination is 'target' but the match ends by 'both_over_target'" in found.reason


def test_unknown_fields_are_ignored(record: list[Line]) -> None:
    for line in record:
        line["comment"] = "a later writer's field"
        for action in line.get("actions", []):
            action["note"] = {"any": ["thing"]}
    assert _verify(record).ok


def test_line_terminators_and_bytes_are_accepted() -> None:
    texts = list(_standard_text())
    mixed: list[str | bytes] = [
        (text + "\r\n").encode() if position % 2 else text + "\n"
        for position, text in enumerate(texts)
    ]
    assert _verify(mixed).ok


def test_forfeit_during_a_game_verifies() -> None:
    lines = _forfeit_record(finished_games=2, cut_after=7)
    assert lines[-2]["finished"] is False
    assert "points" not in lines[-2]
    report = _verify(lines)
    assert report.ok, report.disagreement
    finished = sum(len(game.history) for game in _played()[0].games[:2])
    assert (report.matches, report.games, report.actions) == (1, 3, finished + 7)


def test_forfeit_between_games_and_before_any_game_verifies() -> None:
    assert _verify(_forfeit_record(finished_games=1, cut_after=None)).ok
    assert _verify(_forfeit_record(finished_games=0, cut_after=None, offender=Seat.FIRST)).ok


def test_forfeit_winner_must_be_the_other_seat() -> None:
    lines = _forfeit_record(finished_games=2, cut_after=7)
    lines[-1]["winner"] = 1
    found = _disagreement(lines)
    assert (found.line, found.match, found.game) == (len(lines), 1, None)
    assert found.reason == "winner is seat 1 but seat 1 forfeited"


def test_forfeit_needs_its_details() -> None:
    lines = _forfeit_record(finished_games=2, cut_after=None)
    del lines[-1]["forfeit"]
    assert _disagreement(lines).reason == "match_end line has no 'forfeit' field"


def test_forfeit_cannot_follow_a_decided_match(record: list[Line]) -> None:
    end = record[_index(record, 1, kind="match_end")]
    end |= {"termination": "forfeit", "winner": 1, "forfeit": {"seat": 0, "fault": "crash"}}
    assert "cannot end by forfeit" in _disagreement(record).reason


def test_forfeit_scores_count_finished_games_only() -> None:
    lines = _forfeit_record(finished_games=2, cut_after=7)
    lines[-1]["games"] = 3
    assert "games is 3 but the match has 2 finished game(s)" in _disagreement(lines).reason


def test_a_cut_short_game_must_be_the_last() -> None:
    lines = _forfeit_record(finished_games=1, cut_after=4)
    lines.insert(-1, dict(lines[-2], game=3))
    found = _disagreement(lines)
    assert (found.line, found.game) == (len(lines) - 1, 3)
    assert "game 2 was cut short" in found.reason


def test_a_cut_short_game_needs_a_forfeit_ending() -> None:
    lines = _forfeit_record(finished_games=1, cut_after=4)
    lines[-1]["termination"] = "cold"
    del lines[-1]["forfeit"]
    assert "only a forfeit can end the match" in _disagreement(lines).reason


def test_finished_must_agree_with_the_actions() -> None:
    lines = _forfeit_record(finished_games=1, cut_after=4)
    lines[-2]["finished"] = True
    found = _disagreement(lines)
    assert found.game == 2
    assert found.reason.startswith("finished is true but the game is not over")

    lines = _forfeit_record(finished_games=1, cut_after=None)
    lines[-2]["finished"] = False
    assert _disagreement(lines).reason == "finished is false but the actions complete the game"


def test_a_cut_short_game_states_no_result() -> None:
    lines = _forfeit_record(finished_games=1, cut_after=4)
    lines[-2]["points"] = [0, 0]
    assert "has points" in _disagreement(lines).reason


def test_faults_are_checked_for_shape_only() -> None:
    lines = _forfeit_record(finished_games=1, cut_after=None)
    lines[-1]["faults"] = [{"seat": 0, "fault": "timeout", "bot": "x", "stderr_tail": []}]
    assert _verify(lines).ok
    lines[-1]["faults"] = [{"seat": 2, "fault": "timeout"}]
    assert _disagreement(lines).reason == "faults[0]: 'seat' must be a seat, 0 or 1, got 2"


# ---------------------------------------------------------------------------------------------
# Verifying: what each kind of damage reports

Mutation = Callable[[list[Line]], None]


def _edit(
    match: int, game: int | None, change: Callable[[Line], object], kind: str = "game"
) -> Mutation:
    def mutate(record: list[Line]) -> None:
        change(record[_index(record, match, game, kind)])

    return mutate


def _set(match: int, game: int | None, fields: Line, kind: str = "game") -> Mutation:
    return _edit(match, game, lambda line: line.update(fields), kind)


def _flipped(match: int, game: int | None, key: str, kind: str = "game") -> Mutation:
    """Give a seat field the other seat."""
    return _edit(match, game, lambda line: line.update({key: 1 - line[key]}), kind)


def _first(line: Line, kind: str) -> int:
    return next(n for n, action in enumerate(line["actions"]) if action["action"] == kind)


def _swap_lead_and_follow(line: Line) -> None:
    position = _first(line, "play")
    actions = line["actions"]
    actions[position], actions[position + 1] = actions[position + 1], actions[position]


def _more_points(line: Line) -> None:
    line["points"][line["winner"]] += 1


def _other_trick_winner(line: Line) -> None:
    line["tricks"][2]["winner"] = 1 - line["tricks"][2]["winner"]


def _other_save(line: Line) -> None:
    line["bonuses"]["save"] = not line["bonuses"]["save"]


def _other_termination(line: Line) -> None:
    line["termination"] = "target" if line["termination"] == "cold" else "cold"


class Damage(NamedTuple):
    """A change to a record and the disagreement it must cause, on the changed line."""

    mutate: Mutation
    match: int | None
    game: int | None
    #: The 1-based action index; -1 stands for "the first trick's follow".
    action: int | None
    #: How the reason starts.
    reason: str


CASES: dict[str, Damage] = {
    "duplicate card in deck": Damage(
        _edit(2, 2, lambda line: line["deck"].__setitem__(20, line["deck"][30])),
        match=2,
        game=2,
        action=None,
        reason="the deck holds ",
    ),
    "bad card code in deck": Damage(
        _edit(2, 2, lambda line: line["deck"].__setitem__(3, "1H")),
        match=2,
        game=2,
        action=None,
        reason="game line: 'deck'[3]: not a card code: '1H'",
    ),
    "deck of 51 cards": Damage(
        _edit(2, 2, lambda line: line["deck"].pop()),
        match=2,
        game=2,
        action=None,
        reason="game line: 'deck' must be a list of 52",
    ),
    "swapped actions": Damage(
        _edit(2, 2, _swap_lead_and_follow), match=2, game=2, action=-1, reason="illegal card"
    ),
    "wrong points": Damage(
        _edit(2, 1, _more_points), match=2, game=1, action=None, reason="points ["
    ),
    "wrong trick winner": Damage(
        _edit(2, 1, _other_trick_winner),
        match=2,
        game=1,
        action=None,
        reason="trick 3: winner is seat ",
    ),
    "wrong game winner": Damage(
        _flipped(1, 1, "winner"), match=1, game=1, action=None, reason="winner is seat "
    ),
    "wrong tricks_won": Damage(
        _set(1, 1, {"tricks_won": [5, 5]}),
        match=1,
        game=1,
        action=None,
        reason="tricks_won [5, 5] but",
    ),
    "wrong attacker": Damage(
        _flipped(1, 2, "attacker"), match=1, game=2, action=None, reason="attacker seat "
    ),
    "wrong master bid": Damage(
        _set(1, 2, {"master_bid": 1, "slave_bid": None}),
        match=1,
        game=2,
        action=None,
        reason="master_bid 1",
    ),
    "wrong bonus": Damage(
        _edit(1, 1, _other_save), match=1, game=1, action=None, reason="bonuses: save is "
    ),
    "wrong scores_after": Damage(
        _set(1, 1, {"scores_after": [99, 0]}),
        match=1,
        game=1,
        action=None,
        reason="scores_after [99, 0]",
    ),
    "wrong scores_before": Damage(
        _set(1, 2, {"scores_before": [1, 1]}),
        match=1,
        game=2,
        action=None,
        reason="scores_before [1, 1]",
    ),
    "wrong master": Damage(
        _flipped(2, 2, "master"), match=2, game=2, action=None, reason="master is seat "
    ),
    "wrong first master": Damage(
        _flipped(3, None, "first_master", "match_start"),
        match=3,
        game=None,
        action=None,
        reason="first_master is seat ",
    ),
    "wrong termination": Damage(
        _edit(1, None, _other_termination, "match_end"),
        match=1,
        game=None,
        action=None,
        reason="termination is ",
    ),
    "unknown termination": Damage(
        _set(1, None, {"termination": "resigned"}, "match_end"),
        match=1,
        game=None,
        action=None,
        reason="match_end line: unknown termination 'resigned'",
    ),
    "wrong match winner": Damage(
        _flipped(2, None, "winner", "match_end"),
        match=2,
        game=None,
        action=None,
        reason="winner is seat ",
    ),
    "wrong match scores": Damage(
        _set(2, None, {"scores": [0, 0]}, "match_end"),
        match=2,
        game=None,
        action=None,
        reason="scores [0, 0]",
    ),
    "wrong game count": Damage(
        _set(2, None, {"games": 99}, "match_end"),
        match=2,
        game=None,
        action=None,
        reason="games is 99",
    ),
    "missing key": Damage(
        _edit(2, 1, lambda line: line.pop("scores_after")),
        match=2,
        game=1,
        action=None,
        reason="game line has no 'scores_after' field",
    ),
    "wrong type": Damage(
        _set(2, 1, {"master": "0"}),
        match=2,
        game=1,
        action=None,
        reason="game line: 'master' must be a seat",
    ),
    "bool is not a seat": Damage(
        _set(2, 1, {"master": True}),
        match=2,
        game=1,
        action=None,
        reason="game line: 'master' must",
    ),
    "wrong format version": Damage(
        _set(2, None, {"version": 2}, "match_start"),
        match=None,
        game=None,
        action=None,
        reason="record version 2 is not supported (this verifier reads version 1)",
    ),
    "wrong format": Damage(
        _set(1, None, {"format": "chess-pgn"}, "match_start"),
        match=None,
        game=None,
        action=None,
        reason="format is 'chess-pgn', not 'aegis-record'",
    ),
    "unknown rules option": Damage(
        _edit(1, None, lambda line: line["rules"].update(jokers=2), "match_start"),
        match=1,
        game=None,
        action=None,
        reason="unknown rules option(s) jokers",
    ),
    "missing rules option": Damage(
        _edit(1, None, lambda line: line["rules"].pop("cold_margin"), "match_start"),
        match=1,
        game=None,
        action=None,
        reason="match_start line: 'rules' lacks cold_margin",
    ),
    "bad rules value": Damage(
        _edit(1, None, lambda line: line["rules"].update(max_exchange_rounds=9), "match_start"),
        match=1,
        game=None,
        action=None,
        reason="rules option max_exchange_rounds must be between 0 and 4",
    ),
    "same card drawn twice for first master": Damage(
        _edit(
            1, None, lambda line: line.update(first_draw=line["first_draw"][:1] * 2), "match_start"
        ),
        match=1,
        game=None,
        action=None,
        reason="both seats cannot draw the same card",
    ),
    "match number out of order": Damage(
        _set(2, None, {"match": 3}, "match_start"),
        match=3,
        game=None,
        action=None,
        reason="match number 3 out of order",
    ),
    "game number out of order": Damage(
        _set(1, 2, {"game": 3}), match=1, game=3, action=None, reason="game number 3 out of order"
    ),
    "game of another match": Damage(
        _set(1, 2, {"match": 2}),
        match=1,
        game=None,
        action=None,
        reason="game line of match 2 inside",
    ),
    "unknown line type": Damage(
        _set(1, 2, {"type": "chat"}),
        match=1,
        game=None,
        action=None,
        reason="unknown line type 'chat'",
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_damage_is_located_and_explained(name: str, record: list[Line]) -> None:
    mutate, match, game, action, reason = CASES[name]
    before = [dumps_line(line) for line in record]
    mutate(record)
    after = [dumps_line(line) for line in record]
    changed = [n for n, (old, new) in enumerate(zip(before, after, strict=True), 1) if old != new]
    assert len(changed) == 1
    found = _disagreement(after)
    assert found.line == changed[0]
    assert found.reason.startswith(reason), found.reason
    assert (found.match, found.game) == (match, game)
    if action == -1:
        line = record[changed[0] - 1]
        follow = _first(line, "play") + 1  # 1-based index of the swapped-in follow
        assert found.action == follow
        assert found.action_text == (
            f"seat {line['actions'][follow - 1]['seat']} play {line['actions'][follow - 1]['card']}"
        )
    else:
        assert found.action == action


def test_illegal_action_names_seat_action_and_rule(record: list[Line]) -> None:
    line = record[_index(record, 1, 1)]
    # Replace the first follow with a card of another suit from the follower's hand: the
    # engine's own message explains why it is illegal.
    position = _first(line, "play") + 1
    line["actions"][position]["card"] = "XX"
    found = _disagreement(record)
    assert found.action == position + 1
    assert found.action_text is None  # it did not even parse
    assert "bad card in play action" in found.reason

    line["actions"][position]["card"] = line["deck"][10]  # the key card is out of play (D2)
    found = _disagreement(record)
    assert found.action_text == f"seat {line['actions'][position]['seat']} play {line['deck'][10]}"
    assert found.reason.endswith("not in hand")


def test_action_by_the_wrong_seat(record: list[Line]) -> None:
    line = record[_index(record, 1, 1)]
    line["actions"][0]["seat"] = 1 - line["master"]
    found = _disagreement(record)
    assert found.action == 1
    assert f"it is seat {line['master']}'s turn in the " in found.reason


def test_action_after_the_game_is_over(record: list[Line]) -> None:
    line = record[_index(record, 1, 1)]
    line["actions"].append(dict(line["actions"][-1]))
    found = _disagreement(record)
    assert found.action == len(line["actions"])
    assert found.reason.endswith("game over")


def test_exchange_draws_must_match_the_stock(record: list[Line]) -> None:
    line, position = next(
        (line, n)
        for line in record
        for n, action in enumerate(line.get("actions", []))
        if action["action"] == "exchange" and len(action["drawn"]) >= 2
    )
    drawn = line["actions"][position]["drawn"]
    drawn[0], drawn[1] = drawn[1], drawn[0]
    found = _disagreement(record)
    assert (found.match, found.game, found.action) == (line["match"], line["game"], position + 1)
    assert found.reason.startswith(f"drawn {drawn[0]} {drawn[1]}")
    assert "from the top of the stock" in found.reason

    del line["actions"][position]["drawn"]
    assert _disagreement(record).reason == "exchange has no 'drawn' field"


def test_only_exchanges_draw(record: list[Line]) -> None:
    line = record[_index(record, 1, 1)]
    position = _first(line, "play")
    line["actions"][position]["drawn"] = []
    found = _disagreement(record)
    assert found.action == position + 1
    assert found.reason == "only an exchange draws cards, yet this play has 'drawn'"


def test_bad_decision_time(record: list[Line]) -> None:
    record[1]["actions"][0]["ms"] = -1
    assert _disagreement(record).reason.startswith("'ms' must be a number of milliseconds")


def test_tricks_must_match_the_plays(record: list[Line]) -> None:
    line = record[_index(record, 1, 1)]
    line["tricks"][1]["cards"].reverse()
    assert _disagreement(record).reason.startswith("trick 2: cards are ")
    line["tricks"][1]["cards"].reverse()
    line["tricks"][1]["leader"] = 1 - line["tricks"][1]["leader"]
    assert _disagreement(record).reason.startswith("trick 2: leader is seat ")
    line["tricks"][1]["leader"] = 1 - line["tricks"][1]["leader"]
    line["tricks"].pop()
    assert _disagreement(record).reason == "4 tricks listed but the actions make 5"


def test_a_game_after_the_match_is_decided(record: list[Line]) -> None:
    end = _index(record, 1, kind="match_end")
    extra = dict(record[end - 1], game=record[end - 1]["game"] + 1)
    record.insert(end, extra)
    found = _disagreement(record)
    assert found.line == end + 1
    assert "the match was over after game" in found.reason


def test_a_match_end_before_the_match_is_decided(record: list[Line]) -> None:
    end = _index(record, 1, kind="match_end")
    del record[end - 1]
    found = _disagreement(record)
    assert found.line == end
    assert found.reason.startswith("the match is not over after game")


@pytest.mark.parametrize(
    ("texts", "line", "reason"),
    [
        ([], 0, "the record holds no match"),
        (["", "{}"], 1, "empty line"),
        (["[1, 2]"], 1, "a record line must be a JSON object, got [1, 2]"),
        ([b'{"type": "match_start\xff"}'], 1, "line is not valid UTF-8 (byte 22)"),
        (['{"type": "game", "type": "game"}'], 1, "line is not valid JSON: duplicate key 'type'"),
        (['{"type": NaN}'], 1, "line is not valid JSON: NaN is not a JSON value"),
        (["[" * 100_000], 1, "line is not valid JSON"),
        (['{"type": 1}'], 1, "record line: 'type' must be a string, got 1"),
        (['{"kind": 1}'], 1, "record line has no 'type' field"),
        (['{"type": "game", "match": 1}'], 1, "a game line outside a match"),
        (['{"type": "match_end", "match": 1}'], 1, "a match_end line outside a match"),
    ],
)
def test_malformed_lines(texts: list[str | bytes], line: int, reason: str) -> None:
    found = _disagreement(texts)
    assert found.line == line
    assert found.reason.startswith(reason), found.reason


def test_bad_json_names_its_line_and_match(record: list[Line]) -> None:
    texts = [dumps_line(line) for line in record]
    broken = _index(record, 2, 2)
    texts[broken] = texts[broken][:40]
    found = _disagreement(texts)
    assert (found.line, found.match, found.game) == (broken + 1, 2, None)
    assert found.reason.startswith("line is not valid JSON: Unterminated string")
    assert str(found).startswith("match 2: line is not valid JSON")


def test_truncated_record(record: list[Line]) -> None:
    texts = [dumps_line(line) for line in record]
    cut = _index(record, 3, 1) + 1
    found = _disagreement(texts[:cut])
    assert (found.line, found.match) == (cut, 3)
    assert found.reason == "the record ends inside match 3: no match_end line"
    # Cut in the middle of a line: that line is not JSON.
    found = _disagreement([*texts[: cut - 1], texts[cut - 1][: len(texts[cut - 1]) // 2]])
    assert (found.line, found.match) == (cut, 3)
    assert found.reason.startswith("line is not valid JSON")


def test_missing_match_end_before_the_next_match(record: list[Line]) -> None:
    end = _index(record, 1, kind="match_end")
    del record[end]
    found = _disagreement(record)
    assert (found.line, found.match) == (end + 1, 1)
    assert found.reason == "match 1 has no match_end line before the next match_start"


def _void_lines(match_number: int, seed: int = 5) -> list[Line]:
    """A void match as the runner writes it: both bots failed their handshake."""
    faults = [
        Fault(FaultKind.HANDSHAKE, seat, f"bot{seat}", "process ended (exit code 1)")
        for seat in (0, 1)
    ]
    match = new_match(DEFAULTS, draw_first_master(random.Random(seed)))
    report = MatchReport(f"m{match_number}", ("bot0", "bot1"), seed, match, faults=faults)
    report.void = True
    return report.record_lines(match_number)


def test_void_matches_verify_and_close_their_match(record: list[Line]) -> None:
    """Void matches (both bots failed before the first game) are valid matches of a record,
    before, between and after played ones, and are counted."""
    played = record[: _index(record, 1, kind="match_end") + 1]
    lines = [*_void_lines(1), *_void_lines(2), *(line | {"match": 3} for line in played)]
    lines += _void_lines(4)
    report = _verify(lines)
    assert report.disagreement is None
    assert report.matches == 4
    assert report.games == sum(1 for line in played if line["type"] == "game")


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"winner": 0}, "a void match has no winner, got 0"),
        ({"scores": [1, 0]}, "scores [1, 0] but a void match plays no game: [0, 0]"),
        ({"games": 1}, "games is 1 but a void match plays no game"),
        ({"forfeit": {"seat": 0, "fault": "crash"}}, "only a forfeit states 'forfeit' details"),
        ({"faults": []}, "a void match names one fault for each seat, 0 and 1; got seats none"),
    ],
)
def test_a_void_match_end_is_checked(change: Line, reason: str) -> None:
    lines = _void_lines(1)
    lines[-1] |= change
    found = _disagreement(lines)
    assert (found.line, found.match) == (2, 1)
    assert found.reason.startswith(reason)


def test_a_void_match_names_both_seats_and_plays_no_game(record: list[Line]) -> None:
    lines = _void_lines(1)
    faults = lines[-1]["faults"]
    faults[1]["seat"] = 0
    assert _disagreement(lines).reason.endswith("got seats 0, 0")
    void_end = _void_lines(1)[-1]
    after_a_game = [*record[: _index(record, 1, 1) + 1], void_end]
    assert _disagreement(after_a_game).reason == "only a match with no game played can be void"


def test_disagreement_text() -> None:
    found = Disagreement(9, "illegal card", match=3, game=2, action=7, action_text="seat 1 play 7H")
    assert str(found) == "match 3, game 2, action 7 (seat 1 play 7H): illegal card"
    assert str(Disagreement(1, "empty line")) == "empty line"


# Any JSON value, for the fuzz test below.
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 60)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4),
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=6,
)


def _paths(value: object, prefix: tuple[object, ...] = ()) -> Iterator[tuple[object, ...]]:
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for position, item in enumerate(value):
            yield from _paths(item, (*prefix, position))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_any_damage_gives_a_disagreement_never_an_exception(data: st.DataObject) -> None:
    """Replace, delete or add any value anywhere: verify reports, it never raises."""
    record = [json.loads(text) for text in _standard_text()[:8]]
    position = data.draw(st.integers(0, len(record) - 1))
    paths = [path for path in _paths(record[position]) if path]
    path = data.draw(st.sampled_from(paths))
    parent: Any = record[position]
    for step in path[:-1]:
        parent = parent[step]
    operation = data.draw(st.sampled_from(["replace", "delete", "add"]))
    if operation == "delete":
        del parent[path[-1]]
    elif operation == "add" and isinstance(parent, dict):
        parent[data.draw(st.text(max_size=6))] = data.draw(_JSON)
    else:
        parent[path[-1]] = data.draw(_JSON)
    report = verify_lines(enumerate(map(dumps_line, record), 1))
    assert isinstance(report, VerifyReport)
    if report.disagreement is not None:
        assert report.disagreement.line in range(1, len(record) + 1)


# ---------------------------------------------------------------------------------------------
# The spec agrees with the code


def test_docs_state_the_current_format_and_version() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert f"- Format name: `{RECORD_FORMAT}`" in text
    versions = re.findall(r"^- Version: `(\d+)`$", text, flags=re.MULTILINE)
    assert versions == [str(RECORD_VERSION)]


def test_docs_examples_are_lines_of_a_golden_record() -> None:
    text = DOCS.read_text(encoding="utf-8")
    examples = [json.loads(block) for block in re.findall(r"```json\n(.*?)\n```", text, re.DOTALL)]
    assert {example["type"] for example in examples} == {"match_start", "game", "match_end"}
    golden = [
        json.loads(line)
        for path in sorted(GOLDEN_DIRECTORY.glob("*.jsonl"))
        for line in path.read_text(encoding="utf-8").splitlines()
    ]
    for example in examples:
        assert example in golden, f"docs/records.md example not in tests/golden: {example}"
