"""The SDK's fast converters: wire maps → typed views, checked against the engine itself."""

from __future__ import annotations

import random
import re
import threading
import time
from types import MappingProxyType
from typing import Any

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol import builders
from protocol.errors import ProtocolError
from protocol.sdk_views import (
    MAX_MESSAGE_BYTES,
    BidMade,
    CardPlayed,
    Event,
    ExchangeMade,
    ExchangeStopped,
    GameEnded,
    GameStarted,
    LegalActions,
    MatchInfo,
    SlavePassed,
    TrickTaken,
    UnknownEvent,
    decode_message,
    format_action,
    parse_action_text,
    parse_decide,
    parse_events,
    parse_match_end,
    parse_match_start,
    parse_observation,
    read_bot_action,
    validate_strictly,
)
from protocol.views import EventTracker, decision_kind, legal_to_wire, observation_to_wire
from referee.rules.actions import PASS, STOP, Exchange, bid, parse_action, play
from referee.rules.cards import parse_card, parse_cards
from referee.rules.errors import ActionParseError
from referee.rules.game import Observation, Seat, apply, legal_actions, observation, shuffled_deck
from referee.rules.match import draw_first_master, finish_game, new_match, start_game
from referee.rules.options import RulesOptions


def wire(value: Any) -> Any:
    """Through msgpack and back, as the SDK receives it."""
    return msgpack.unpackb(msgpack.packb(value))


def event_to_wire(event: Event) -> dict[str, Any]:
    """The inverse of the SDK's event conversion, to compare with what was sent."""
    match event:
        case GameStarted(game, master, key_card, hand, scores):
            return {
                "event": "game_start",
                "game": game,
                "master": master,
                "key_card": str(key_card),
                "hand": [str(card) for card in hand],
                "scores": list(scores),
            }
        case ExchangeMade(seat, round_, count):
            return {"event": "exchange", "seat": seat, "round": round_, "count": count}
        case ExchangeStopped(seat, round_):
            return {"event": "stop", "seat": seat, "round": round_}
        case BidMade(seat, tricks):
            return {"event": "bid", "seat": seat, "tricks": tricks}
        case SlavePassed(seat):
            return {"event": "pass", "seat": seat}
        case CardPlayed(seat, card):
            return {"event": "play", "seat": seat, "card": str(card)}
        case TrickTaken(number, leader, lead, follow, winner):
            return {
                "event": "trick",
                "number": number,
                "leader": leader,
                "cards": [str(lead), str(follow)],
                "winner": winner,
            }
        case GameEnded():
            return {"event": "game_end"} | {
                name: list(value) if isinstance(value, tuple) else value
                for name, value in event._asdict().items()
            }
    raise AssertionError(f"unexpected event {event!r}")


def decide_messages(
    seed: int, options: RulesOptions
) -> list[tuple[Observation, Any, dict[str, Any]]]:
    """Every decision of a random match: the engine's observation, legal actions and the
    ``decide`` map the referee would send, through msgpack."""
    rng = random.Random(seed)
    match = new_match(options, draw_first_master(rng))
    trackers = (EventTracker(), EventTracker())
    found: list[tuple[Observation, Any, dict[str, Any]]] = []
    while match.result is None:
        game = start_game(match, shuffled_deck(rng))
        while game.to_move is not None:
            seat = game.to_move
            seen = observation(game, seat)
            trackers[seat].observe(seen)
            legal = legal_actions(game)
            message = {
                "version": "1.0",
                "type": "decide",
                "id": len(found),
                "match_id": "m",
                "decision": decision_kind(seen),
                "events": trackers[seat].take(),
                "observation": observation_to_wire(seen),
                "legal": legal_to_wire(legal),
                "deadline_ms": 100,
                "bank_ms": None if seed % 2 else 5000,
            }
            found.append((seen, legal, wire(message)))
            game = apply(game, seat, legal[rng.randrange(len(legal))])
        for seat in (Seat.FIRST, Seat.SECOND):
            trackers[seat].observe(observation(game, seat))
        match = finish_game(match, game)
    return found


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**32),
    options=st.builds(
        RulesOptions,
        target_score=st.integers(1, 30),
        max_exchange_rounds=st.integers(0, 4),
    ),
)
def test_a_decide_converts_to_exactly_what_the_engine_saw(seed: int, options: RulesOptions) -> None:
    for seen, legal, message in decide_messages(seed, options):
        view = parse_decide(message, None, 1.0)
        assert view.observation == seen._replace(result=None)
        assert list(view.legal) == list(legal)
        assert view.legal_text == tuple(message["legal"])
        assert [event_to_wire(event) for event in view.events] == message["events"]
        assert view.decision == message["decision"]
        assert (view.request_id, view.match_id) == (message["id"], "m")
        assert (view.deadline_ms, view.bank_ms) == (100, message["bank_ms"])
        assert view.seat is seen.seat
        assert view.hand == seen.hand
        assert view.lead is seen.lead
        assert view.trump is seen.trump
        validate_strictly(message)  # the models agree that it is valid


def test_unknown_fields_are_ignored_at_every_level() -> None:
    for _seen, _legal, message in decide_messages(3, RulesOptions())[:12]:
        plain = parse_decide(message, None, 1.0)
        noisy = dict(message, extra={"any": [1]})
        noisy["observation"] = dict(message["observation"], future_field=None)
        noisy["observation"]["tricks"] = [
            dict(trick, note="x") for trick in message["observation"]["tricks"]
        ]
        noisy["events"] = [dict(event, detail=[]) for event in message["events"]]
        converted = parse_decide(noisy, None, 1.0)
        assert converted.observation == plain.observation
        assert converted.events == plain.events


def test_an_unknown_event_kind_is_kept_as_it_came() -> None:
    (event,) = parse_events([{"event": "comet", "size": 3}])
    assert isinstance(event, UnknownEvent)
    assert event.kind == "comet"
    assert event.data["size"] == 3
    assert isinstance(event.data, MappingProxyType)


def test_the_view_is_immutable() -> None:
    _seen, _legal, message = decide_messages(1, RulesOptions())[0]
    view = parse_decide(message)
    with pytest.raises(AttributeError):
        view.deadline_ms = 5  # type: ignore[misc]
    with pytest.raises(TypeError):
        view.raw["id"] = 3  # type: ignore[index]
    assert 0.0 < view.time_left() <= 0.1  # deadline_ms 100, received just now


def test_time_left_counts_from_arrival() -> None:
    _seen, _legal, message = decide_messages(1, RulesOptions())[0]
    view = parse_decide(message, None, time.monotonic() - 1.0)
    assert view.time_left() < -0.8


def match_on(clock: str) -> MatchInfo:
    """The match of :func:`decide_messages` (its id ``m``) as announced on ``clock``."""
    control = {"decision_ms": 100, "bank_ms": None, "warmup_ms": 500}
    message = builders.match_start("m", Seat.FIRST, "other", RulesOptions(), control, 5, clock)
    return parse_match_start({**message, "version": "1.2", "id": 1})


def spin_thread_cpu(seconds: float) -> None:
    """Spin until the calling thread has used ``seconds`` of CPU time."""
    until = time.thread_time() + seconds
    while time.thread_time() < until:
        pass


def test_under_the_cpu_clock_time_left_is_cpu_time_so_waiting_costs_nothing() -> None:
    _seen, _legal, message = decide_messages(1, RulesOptions())[0]
    view = parse_decide(message, match_on("cpu"))  # deadline_ms 100
    assert view.clock == "cpu"
    time.sleep(0.15)  # no CPU: what a bot waiting for a busy machine's CPU is not charged
    assert view.time_left() > 0.05


def test_under_the_cpu_clock_every_thread_of_the_process_spends_time_left() -> None:
    _seen, _legal, message = decide_messages(1, RulesOptions())[0]
    view = parse_decide(message, match_on("cpu"))
    helper = threading.Thread(target=spin_thread_cpu, args=(0.15,))
    helper.start()
    helper.join()
    assert view.time_left() < -0.04


def test_under_the_wall_clock_or_an_unknown_match_time_left_is_wall_time() -> None:
    _seen, _legal, message = decide_messages(1, RulesOptions())[0]
    views = [parse_decide(message, match_on("wall")), parse_decide(message, None)]
    assert [view.clock for view in views] == ["wall", "wall"]
    time.sleep(0.15)
    assert all(view.time_left() < -0.04 for view in views)


# ---------------------------------------------------------------------------------------------
# Malformed input


def _first_decide() -> dict[str, Any]:
    message: dict[str, Any] = decide_messages(2, RulesOptions())[0][2]
    return message


OBSERVATION_FIELDS = list(_first_decide()["observation"])


@pytest.mark.parametrize("name", OBSERVATION_FIELDS)
def test_a_missing_observation_field_is_named(name: str) -> None:
    message = _first_decide()
    del message["observation"][name]
    with pytest.raises(ProtocolError, match=name):
        parse_decide(message)


@pytest.mark.parametrize(
    "name", ["match_id", "decision", "events", "observation", "legal", "deadline_ms", "id"]
)
def test_a_missing_decide_field_is_named(name: str) -> None:
    message = _first_decide()
    del message[name]
    with pytest.raises(ProtocolError, match=name):
        parse_decide(message)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("seat", "0"),
        ("seat", 2),
        ("seat", True),
        ("game", 1.0),
        ("hand", "AS"),
        ("hand", ["1S"]),
        ("hand", [["AS"]]),
        ("key_card", "as"),
        ("trump", "X"),
        ("role", "king"),
        ("phase", "dance"),
        ("tricks_won", [0]),
        ("tricks_won", [0, "1"]),
        ("scores", None),
        ("exchange_stopped", 0),
        ("exchange_rounds", [{"master": 1}]),
        ("exchange_rounds", {"master": 1, "slave": None}),
        ("tricks", [{"leader": 0, "cards": ["AS"], "winner": 0}]),
        ("lead", 5),
        ("master_bid", "2"),
        ("to_move", -1),
    ],
)
def test_a_mistyped_observation_field_is_refused(name: str, value: Any) -> None:
    message = _first_decide()
    message["observation"][name] = value
    with pytest.raises(ProtocolError, match=name):
        parse_decide(message)


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("decision", "dance"),
        ("legal", []),
        ("legal", "stop"),
        ("legal", ["stop", 5]),
        ("events", {}),
        ("events", [{"event": "play", "seat": 0}]),
        ("events", [{"event": "bid", "seat": 0, "tricks": "3"}]),
        ("events", [{"seat": 0}]),
        ("events", ["play"]),
        ("observation", []),
        ("deadline_ms", "1000"),
        ("bank_ms", 1.5),
        ("id", -1.0),
    ],
)
def test_a_mistyped_decide_field_is_refused(name: str, value: Any) -> None:
    message = _first_decide()
    message[name] = value
    with pytest.raises(ProtocolError, match="invalid 'decide' message"):
        parse_decide(message)


def test_a_malformed_observation_alone() -> None:
    with pytest.raises(ProtocolError, match="observation"):
        parse_observation({"seat": 0})
    with pytest.raises(ProtocolError, match="must be a map"):
        parse_observation([])
    with pytest.raises(ProtocolError, match="events"):
        parse_events([{"event": "trick", "number": 1}])


@pytest.mark.parametrize(
    ("payload", "problem"),
    [
        (b"\xc1", "not a msgpack message"),
        (msgpack.packb(7), "must be a msgpack map"),
        (msgpack.packb({"type": 7}), "string field 'type'"),
        (msgpack.packb({1: "x"}), "not a msgpack message"),
        (b"\x91" * (MAX_MESSAGE_BYTES + 1), "exceeds"),
        (msgpack.packb({"type": "x"}) + b"\x00", "not a msgpack message"),
    ],
)
def test_decode_refuses_what_is_not_a_message(payload: bytes, problem: str) -> None:
    with pytest.raises(ProtocolError, match=problem):
        decode_message(payload)


# ---------------------------------------------------------------------------------------------
# Legal actions


def test_every_action_string_parses_like_the_engine() -> None:
    texts = {"stop", "pass", "exchange"} | {f"bid {n}" for n in range(1, 6)}
    texts |= {f"play {card}" for card in ("AS", "10H", "2C", "KD")}
    texts |= {"exchange 2S", "exchange AS 2S 10H", "exchange 7D 2S", "exchange KC QC JC 10C 9C"}
    for text in texts:
        assert parse_action_text(text) == parse_action(text)


def test_an_exchange_is_sorted_into_canonical_order() -> None:
    action = parse_action_text("exchange 7D 2S")
    assert action == Exchange(parse_cards(["2S", "7D"]))
    assert str(action) == "exchange 2S 7D"


@pytest.mark.parametrize(
    "text",
    ["", "Play AS", "play", "play 1S", "exchange AS AS", "exchange  AS", "bid 6x", "bid", None, 5],
)
def test_a_bad_action_string_is_refused(text: Any) -> None:
    with pytest.raises(ProtocolError, match="not an action string"):
        parse_action_text(text)


@pytest.mark.parametrize(
    ("text", "action"),
    [
        ("play 10H", "play 10H"),
        ("exchange 7D 2S", "exchange 2S 7D"),
        ("exchange", "exchange"),
        ("bid 7", "bid 7"),  # written as actions are: the rules refuse it, not the reader
    ],
)
def test_a_bots_action_is_read_as_the_spec_writes_it(text: str, action: str) -> None:
    assert str(read_bot_action(text)) == action


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("play  KS", "one space between words"),
        ("Play KS", "'play KS' is"),
        ("stop ", "nothing before or after"),
        ("exchange\t2S", "'exchange 2S' is"),
        ("bid 07", "'bid 7' is"),
        ("exchange 2S 2S", "names a card twice"),
        ("play 1S", "not a card code"),
        ("dance", "not an action"),
    ],
)
def test_a_bots_action_written_otherwise_is_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(ActionParseError, match=re.escape(reason)):
        read_bot_action(text)


def test_legal_actions_are_parsed_lazily_and_remembered() -> None:
    legal = LegalActions(["stop", "exchange 2S 7D", "exchange nonsense"])
    assert len(legal) == 3
    assert legal[0] is STOP
    assert legal[1] is legal[1]
    assert legal[:2] == (STOP, Exchange(parse_cards(["2S", "7D"])))
    assert legal[-2] == legal[1]
    assert "stop" in legal  # type: ignore[comparison-overlap]
    assert STOP in legal
    assert legal.text[2] == "exchange nonsense"
    with pytest.raises(ProtocolError):
        legal[2]
    with pytest.raises(ProtocolError):
        list(legal)
    assert legal == LegalActions(["stop", "exchange 2S 7D", "exchange nonsense"])
    assert len({legal, LegalActions(legal.text)}) == 1
    assert "exchange nonsense" in repr(legal)


def test_random_choice_works_on_legal_actions() -> None:
    legal = LegalActions(["pass", "bid 3", "bid 4"])
    assert random.Random(1).choice(legal) in (PASS, bid(3), bid(4))


def test_format_action() -> None:
    assert format_action(play(parse_card("10H"))) == "play 10H"
    assert format_action(Exchange(())) == "exchange"
    assert format_action("anything") == "anything"
    with pytest.raises(TypeError, match="got int"):
        format_action(3)  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Match start and end


MATCH_START: dict[str, Any] = {
    "version": "1.0",
    "type": "match_start",
    "id": 4,
    "match_id": "m9",
    "seat": 1,
    "opponent": "rival",
    "rules": {"target_score": 10, "cold_margin": 5, "future_rule": 1},
    "time_control": {"decision_ms": 200, "warmup_ms": 1000},
}


def test_match_start() -> None:
    match = parse_match_start(MATCH_START)
    assert (match.match_id, match.seat, match.opponent, match.request_id) == ("m9", 1, "rival", 4)
    assert match.seat is Seat.SECOND
    assert match.time_control.bank_ms is None
    assert match.rules["future_rule"] == 1
    with pytest.raises(TypeError):
        match.rules["target_score"] = 3  # type: ignore[index]
    assert match.rules_options == RulesOptions(target_score=10, cold_margin=5)


@pytest.mark.parametrize(
    ("name", "value"),
    [("seat", 3), ("rules", {"target_score": "25"}), ("time_control", {"decision_ms": 1})],
)
def test_a_malformed_match_start_is_refused(name: str, value: Any) -> None:
    with pytest.raises(ProtocolError, match="invalid 'match_start' message"):
        parse_match_start(dict(MATCH_START, **{name: value}))


def test_match_end() -> None:
    match = parse_match_start(MATCH_START)
    message: dict[str, Any] = {
        "version": "1.0",
        "type": "match_end",
        "id": 9,
        "match_id": "m9",
        "events": [{"event": "play", "seat": 0, "card": "AS"}],
        "result": {"winner": 1, "termination": "target", "scores": [3, 25], "games": 4},
    }
    end = parse_match_end(message, match)
    assert end.is_win is True
    assert end.forfeit is None
    assert end.events == (CardPlayed(Seat.FIRST, parse_card("AS")),)
    assert parse_match_end(message).is_win is None
    message["result"]["forfeit"] = {"seat": 1, "fault": "crash"}
    forfeited = parse_match_end(message)
    assert forfeited.forfeit is not None
    assert (forfeited.forfeit.seat, forfeited.forfeit.detail) == (Seat.SECOND, "")
    message["result"]["winner"] = None
    with pytest.raises(ProtocolError, match="winner"):
        parse_match_end(message)
