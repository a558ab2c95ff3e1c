"""The bot SDK's conversation logic, bytes in and bytes out, without sockets."""

from __future__ import annotations

import logging
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgpack
import pytest

from protocol.codec import decode_map, parse_bot_message
from protocol.errors import ProtocolError
from protocol.sdk import (
    EXIT_OK,
    EXIT_REJECTED,
    Action,
    Bot,
    Decision,
    Event,
    GameStarted,
    MatchEndInfo,
    MatchInfo,
    Session,
    SessionEnd,
)
from protocol.sdk_views import parse_match_start
from protocol.version import PROTOCOL_VERSION
from protocol.views import EventTracker, decision_kind, legal_to_wire, observation_to_wire
from referee.rules.actions import PASS, STOP, Bid, Play
from referee.rules.game import Seat, apply, legal_actions, new_game, observation, shuffled_deck
from referee.rules.options import RulesOptions

VECTORS = Path(__file__).resolve().parents[2] / "protocol" / "vectors"


def pack(kind: str, message_id: int = 50, **fields: Any) -> bytes:
    """A referee message's bytes."""
    packed: bytes = msgpack.packb({"version": "1.0", "type": kind, "id": message_id, **fields})
    return packed


def reply(data: bytes | None) -> dict[str, Any]:
    """A bot reply: validated strictly with the protocol's models, then as a map."""
    assert data is not None, "expected a reply"
    parse_bot_message(data)
    return decode_map(data)


def welcomed(bot: Bot, **options: Any) -> Session:
    """A session past its handshake."""
    session = Session(bot, "token", **options)
    hello = reply(session.start())
    assert (
        session.handle(
            pack(
                "welcome",
                reply_to=hello["id"],
                protocol="1.0",
                referee="test",
                heartbeat_ms=2000,
                max_message_bytes=65536,
            )
        )
        is None
    )
    return session


def decide_map(seed: int = 1, message_id: int = 60, **changes: Any) -> dict[str, Any]:
    """A decide message for the first decision of a real game."""
    game = new_game(RulesOptions(), Seat.FIRST, shuffled_deck(random.Random(seed)))
    seen = observation(game, Seat.FIRST)
    tracker = EventTracker()
    tracker.observe(seen)
    message = {
        "version": "1.0",
        "type": "decide",
        "id": message_id,
        "match_id": "m1",
        "decision": decision_kind(seen),
        "events": tracker.take(),
        "observation": observation_to_wire(seen),
        "legal": legal_to_wire(legal_actions(game)),
        "deadline_ms": 1000,
        "bank_ms": None,
    }
    message.update(changes)
    return message


MATCH_START: dict[str, Any] = {
    "match_id": "m1",
    "seat": 0,
    "opponent": "other",
    "rules": RulesOptions().to_dict(),
    "time_control": {"decision_ms": 1000, "bank_ms": 5000, "warmup_ms": 3000},
}


class Recorder(Bot):
    """Records every call; answers with the first legal action (or what it is told)."""

    name = "recorder"
    author = "tests"
    bot_version = "0.0.1"

    def __init__(self, answer: Any = None, fail: BaseException | None = None) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.answer = answer
        self.fail = fail

    def _choose(self, kind: str, view: Decision, legal: Sequence[Action]) -> Any:
        self.calls.append((kind, view))
        if self.fail is not None:
            raise self.fail
        return legal[0] if self.answer is None else self.answer

    def exchange(self, view: Decision, legal: Sequence[Action]) -> Any:
        return self._choose("exchange", view, legal)

    def bid(self, view: Decision, legal: Sequence[Action]) -> Any:
        return self._choose("bid", view, legal)

    def play(self, view: Decision, legal: Sequence[Action]) -> Any:
        return self._choose("play", view, legal)

    def on_match_start(self, match: MatchInfo) -> None:
        self.calls.append(("match_start", match))

    def on_event(self, event: Event) -> None:
        self.calls.append(("event", event))

    def on_match_end(self, result: MatchEndInfo) -> None:
        self.calls.append(("match_end", result))


# ---------------------------------------------------------------------------------------------
# Handshake


def test_hello_names_the_bot_and_its_versions() -> None:
    session = Session(Recorder(), "the-token")
    hello = reply(session.start())
    assert hello == {
        "version": PROTOCOL_VERSION,
        "type": "hello",
        "id": 1,
        "versions": [PROTOCOL_VERSION],
        "name": "recorder",
        "author": "tests",
        "bot_version": "0.0.1",
        "token": "the-token",
    }


def test_hello_defaults_to_the_class_name_and_trims_long_fields() -> None:
    class Quiet(Bot):
        author = "x" * 500

    hello = reply(Session(Quiet()).start())
    assert hello["name"] == "Quiet"
    assert hello["token"] == ""
    assert len(hello["author"]) == 128


def test_welcome_sets_the_idle_limit_and_ignores_unknown_fields() -> None:
    session = Session(Recorder())
    session.start()
    assert session.idle_limit() == 10.0  # waiting for the welcome
    session.handle(
        pack(
            "welcome",
            reply_to=1,
            protocol="1.0",
            referee="r",
            heartbeat_ms=500,
            max_message_bytes=65536,
            new_field={"any": ["thing"]},
        )
    )
    assert session.welcomed
    assert session.heartbeat_ms == 500
    # No limit until the referee shows that it pings: its silence means nothing before.
    assert session.idle_limit() is None
    session.handle(pack("ping"))
    assert session.idle_limit() == pytest.approx(2.5)
    session.start()
    assert session.idle_limit() == 10.0


def test_a_welcome_for_another_hello_is_ignored(caplog: pytest.LogCaptureFixture) -> None:
    session = Session(Recorder())
    session.start()
    session.handle(pack("welcome", reply_to=77, protocol="1.0", referee="r", heartbeat_ms=5))
    assert not session.welcomed
    assert "does not answer our hello" in caplog.text


def test_a_welcome_in_another_major_version_ends_the_session() -> None:
    session = Session(Recorder())
    session.start()
    with pytest.raises(SessionEnd) as ended:
        session.handle(pack("welcome", reply_to=1, protocol="2.0", referee="r", heartbeat_ms=5))
    assert ended.value.code == EXIT_REJECTED
    assert "2.0" in ended.value.reason


def test_a_welcome_in_a_newer_minor_version_is_accepted() -> None:
    session = Session(Recorder())
    session.start()
    session.handle(pack("welcome", reply_to=1, protocol="1.7", referee="r", heartbeat_ms=50))
    assert session.welcomed
    # We still speak (and say) the version we know.
    assert reply(session.handle(pack("ping")))["version"] == PROTOCOL_VERSION


def test_reject_ends_the_session_with_the_reason() -> None:
    session = Session(Recorder())
    session.start()
    with pytest.raises(SessionEnd) as ended:
        session.handle(
            pack(
                "reject",
                reply_to=1,
                code="auth",
                reason="wrong token",
                supported_versions=["1.0"],
            )
        )
    assert ended.value.code == EXIT_REJECTED
    assert "wrong token" in ended.value.reason


def test_shutdown_ends_the_session_cleanly() -> None:
    session = welcomed(Recorder())
    with pytest.raises(SessionEnd) as ended:
        session.handle(pack("shutdown", reason="bye"))
    assert ended.value.code == EXIT_OK
    # Even without an id or reason: a bot should rather leave than argue.
    with pytest.raises(SessionEnd):
        session.handle(msgpack.packb({"type": "shutdown"}))


def test_start_begins_a_new_connection() -> None:
    session = welcomed(Recorder())
    session.handle(pack("match_start", **MATCH_START))
    assert reply(session.start())["id"] == 1
    assert not session.welcomed
    assert session.heartbeat_ms is None
    # The old connection's match is forgotten.
    act = reply(session.handle(msgpack.packb(decide_map())))
    assert act["type"] == "act"
    view = session.bot.calls[-1][1]  # type: ignore[attr-defined]
    assert view.match is None


# ---------------------------------------------------------------------------------------------
# Requests and replies


def test_match_start_decide_match_end() -> None:
    bot = Recorder()
    session = welcomed(bot)
    ready = reply(session.handle(pack("match_start", message_id=51, **MATCH_START)))
    assert ready["type"] == "ready"
    assert ready["reply_to"] == 51
    kind, match = bot.calls[0]
    assert kind == "match_start"
    assert match.seat is Seat.FIRST
    assert match.time_control.bank_ms == 5000
    assert match.request_id == 51

    data = decide_map(message_id=52)
    act = reply(session.handle(msgpack.packb(data)))
    assert act["type"] == "act"
    assert act["reply_to"] == 52
    assert act["action"] == data["legal"][0]
    assert act["id"] > ready["id"]
    assert bot.calls[1][0] == "event"
    assert isinstance(bot.calls[1][1], GameStarted)
    kind, view = bot.calls[2]
    assert kind == data["decision"]
    assert view.match is match
    assert view.legal_text == tuple(data["legal"])
    assert view.request_id == 52

    assert (
        session.handle(
            pack(
                "match_end",
                message_id=53,
                match_id="m1",
                events=[{"event": "pass", "seat": 1}],
                result={
                    "winner": 0,
                    "termination": "forfeit",
                    "scores": [0, 0],
                    "games": 0,
                    "forfeit": {"seat": 1, "fault": "timeout", "detail": "slow"},
                },
            )
        )
        is None
    )
    assert bot.calls[-2][0] == "event"
    kind, result = bot.calls[-1]
    assert kind == "match_end"
    assert result.is_win is True
    assert result.match is match
    assert result.forfeit.fault == "timeout"


def test_every_reply_has_a_fresh_increasing_id() -> None:
    session = welcomed(Recorder())
    ids = [reply(session.handle(pack("ping", message_id=number)))["id"] for number in range(5)]
    assert ids == sorted(set(ids))
    assert ids[0] == 2  # the hello was 1


@pytest.mark.parametrize(
    ("answer", "sent"),
    [
        (STOP, "stop"),
        (PASS, "pass"),
        (Bid(3), "bid 3"),
        ("exchange 7D 2S", "exchange 7D 2S"),  # strings go as they are
    ],
)
def test_actions_are_sent_in_text_form(answer: Any, sent: str) -> None:
    session = welcomed(Recorder(answer=answer))
    assert reply(session.handle(msgpack.packb(decide_map())))["action"] == sent


def test_decide_calls_the_method_of_the_decision_kind() -> None:
    bot = Recorder()
    session = welcomed(bot)
    game = new_game(
        RulesOptions(max_exchange_rounds=0), Seat.FIRST, shuffled_deck(random.Random(4))
    )
    for expected in ("bid", "bid", "play"):
        seat = game.to_move
        assert seat is not None
        seen = observation(game, seat)
        data = decide_map(
            decision=decision_kind(seen),
            observation=observation_to_wire(seen),
            legal=legal_to_wire(legal_actions(game)),
            events=[],
        )
        act = reply(session.handle(msgpack.packb(data)))
        assert bot.calls[-1][0] == expected
        assert act["action"] == data["legal"][0]
        game = apply(game, seat, legal_actions(game)[0])


def test_decide_alone_is_enough() -> None:
    class Minimal(Bot):
        def decide(self, view: Decision, legal: Sequence[Action]) -> Action:
            return legal[-1]

    session = welcomed(Minimal())
    data = decide_map()
    assert reply(session.handle(msgpack.packb(data)))["action"] == data["legal"][-1]


def test_ping_is_answered_with_pong() -> None:
    session = welcomed(Recorder())
    pong = reply(session.handle(pack("ping", message_id=99, extra="ignored")))
    assert pong["type"] == "pong"
    assert pong["reply_to"] == 99


def test_unknown_type_is_answered_with_an_error_and_the_bot_carries_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    session = welcomed(Recorder())
    error = reply(session.handle(pack("telepathy", message_id=70)))
    assert error["type"] == "error"
    assert error["code"] == "unknown_type"
    assert error["reply_to"] == 70
    assert "telepathy" in caplog.text
    nameless = reply(session.handle(msgpack.packb({"type": "x", "id": "not an int"})))
    assert nameless["reply_to"] is None
    assert reply(session.handle(pack("ping")))["type"] == "pong"


def test_a_bot_message_from_the_referee_is_unexpected() -> None:
    session = welcomed(Recorder())
    error = reply(session.handle(pack("act", reply_to=1, action="pass")))
    assert error["code"] == "unexpected"


def test_referee_errors_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    session = welcomed(Recorder())
    error = pack("error", reply_to=3, code="illegal_action", message="not your turn")
    assert session.handle(error) is None
    assert "illegal_action" in caplog.text
    assert "not your turn" in caplog.text


# ---------------------------------------------------------------------------------------------
# Failures


@pytest.mark.parametrize(
    "payload",
    [b"\xc1", b"", msgpack.packb([1, 2]), msgpack.packb({"no": "type"}), b"\x00" * 70_000],
    ids=["not-msgpack", "empty", "array", "no-type", "too-large"],
)
def test_undecodable_messages_are_logged_and_ignored(
    payload: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    session = welcomed(Recorder())
    assert session.handle(payload) is None
    assert "malformed" in caplog.text
    assert reply(session.handle(pack("ping")))["type"] == "pong"


def test_a_malformed_decide_is_answered_with_an_error(caplog: pytest.LogCaptureFixture) -> None:
    bot = Recorder()
    session = welcomed(bot)
    data = decide_map(message_id=61)
    del data["observation"]["hand"]
    error = reply(session.handle(msgpack.packb(data)))
    assert error["code"] == "malformed"
    assert error["reply_to"] == 61
    assert "hand" in error["message"]
    assert "hand" in caplog.text
    assert bot.calls == []
    # and the next request is served
    assert reply(session.handle(msgpack.packb(decide_map())))["type"] == "act"


def test_a_malformed_match_start_or_ping_is_answered_with_an_error() -> None:
    session = welcomed(Recorder())
    start = dict(MATCH_START, seat=2)
    assert reply(session.handle(pack("match_start", **start)))["code"] == "malformed"
    assert reply(session.handle(msgpack.packb({"type": "ping"})))["code"] == "malformed"


def test_a_malformed_match_end_is_only_logged(caplog: pytest.LogCaptureFixture) -> None:
    bot = Recorder()
    session = welcomed(bot)
    assert session.handle(pack("match_end", match_id="m1", events=[], result={})) is None
    assert "winner" in caplog.text
    assert bot.calls == []


@pytest.mark.parametrize(
    "failure",
    [ValueError("my bug"), NotImplementedError("no"), KeyError("k"), ZeroDivisionError()],
)
def test_an_exception_in_the_bot_is_reported_as_an_unexpected_error(
    failure: Exception, caplog: pytest.LogCaptureFixture
) -> None:
    session = welcomed(Recorder(fail=failure))
    error = reply(session.handle(msgpack.packb(decide_map(message_id=62))))
    assert error["type"] == "error"
    assert error["code"] == "unexpected"
    assert error["reply_to"] == 62
    assert type(failure).__name__ in error["message"]
    assert "Traceback" in caplog.text
    # The bot carries on.
    assert reply(session.handle(pack("ping")))["type"] == "pong"


def test_the_base_class_methods_are_not_implemented() -> None:
    error = reply(welcomed(Bot()).handle(msgpack.packb(decide_map())))
    assert error["code"] == "unexpected"
    assert "does not implement exchange()" in error["message"]


@pytest.mark.parametrize("answer", [None, 3, b"pass", ["pass"], Play], ids=str)
def test_a_bad_return_value_is_an_unexpected_error(answer: Any) -> None:
    class Odd(Bot):
        def decide(self, view: Decision, legal: Sequence[Action]) -> Any:
            return answer

    error = reply(welcomed(Odd()).handle(msgpack.packb(decide_map())))
    assert error["code"] == "unexpected"
    assert "must return an Action or an action string" in error["message"]


def test_a_too_long_action_is_an_unexpected_error() -> None:
    error = reply(welcomed(Recorder(answer="exchange " * 20)).handle(msgpack.packb(decide_map())))
    assert error["code"] == "unexpected"


def test_an_unparsable_legal_action_is_the_referees_fault() -> None:
    data = decide_map(legal=["play XX"])
    error = reply(welcomed(Recorder()).handle(msgpack.packb(data)))
    assert error["code"] == "malformed"
    assert "play XX" in error["message"]


def test_exceptions_in_hooks(caplog: pytest.LogCaptureFixture) -> None:
    class Fragile(Recorder):
        def on_match_start(self, match: MatchInfo) -> None:
            raise RuntimeError("cannot start")

        def on_match_end(self, result: MatchEndInfo) -> None:
            raise RuntimeError("cannot end")

    session = welcomed(Fragile())
    error = reply(session.handle(pack("match_start", message_id=80, **MATCH_START)))
    assert (error["code"], error["reply_to"]) == ("unexpected", 80)
    end = pack(
        "match_end",
        match_id="m1",
        events=[],
        result={"winner": 1, "termination": "cold", "scores": [0, 10], "games": 2},
    )
    assert session.handle(end) is None
    assert "cannot end" in caplog.text


def test_debug_mode_validates_with_the_models() -> None:
    # deadline_ms must be positive: the fast converter does not check it, the models do.
    data = msgpack.packb(decide_map(deadline_ms=0))
    assert reply(welcomed(Recorder()).handle(data))["type"] == "act"
    error = reply(welcomed(Recorder(), debug=True).handle(data))
    assert error["code"] == "malformed"
    assert "deadline_ms" in error["message"]
    assert reply(welcomed(Recorder(), debug=True).handle(pack("ping")))["type"] == "pong"


def test_events_hooks_are_skipped_when_not_overridden() -> None:
    calls = []

    class Plain(Bot):
        def decide(self, view: Decision, legal: Sequence[Action]) -> Action:
            calls.append(len(view.events))
            return legal[0]

    reply(welcomed(Plain()).handle(msgpack.packb(decide_map())))
    assert calls == [1]


# ---------------------------------------------------------------------------------------------
# The checked-in vectors


def test_every_referee_vector_is_understood() -> None:
    names = sorted(path.stem for path in VECTORS.glob("*.msgpack"))
    assert names, "no vectors found"
    answers: dict[str, str | None] = {}
    for name in names:
        session = welcomed(Recorder())
        session.handle(pack("match_start", **MATCH_START))
        try:
            answer = session.handle((VECTORS / f"{name}.msgpack").read_bytes())
        except SessionEnd as end:
            answers[name] = f"end {end.code}"
            continue
        answers[name] = None if answer is None else reply(answer)["type"]
    expected: dict[str, str | None] = {
        "decide_bid": "act",
        "decide_exchange": "act",
        "decide_play": "act",
        "match_start": "ready",
        "match_end": None,
        "match_end_forfeit": None,
        "ping": "pong",
        "error": None,
        "shutdown": "end 0",
        "reject": "end 3",
        "welcome": None,  # answers another hello: ignored
    }
    for name, wanted in expected.items():
        if name in answers:
            assert answers[name] == wanted, name
    # Bot messages sent to a bot are refused, never crash it.
    for name in ("hello", "ready", "act_play", "pong"):
        if name in answers:
            assert answers[name] == "error", name


def test_logger_is_quiet_on_success(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    session = welcomed(Recorder())
    session.handle(pack("match_start", **MATCH_START))
    session.handle(msgpack.packb(decide_map()))
    assert [record for record in caplog.records if record.levelno >= logging.WARNING] == []


class Drawer(Bot):
    """Draws from ``self.rng`` at every decision, as a random bot does."""

    def __init__(self) -> None:
        self.drawn: list[float] = []

    def decide(self, view: Decision, legal: Sequence[Action]) -> Action:
        self.drawn.append(self.rng.random())
        return legal[0]


def _draws(session: Session, bot: Drawer, match_id: str, **start: Any) -> list[float]:
    """Start a match (``start`` overrides ``match_start``'s fields), answer three decides."""
    bot.drawn.clear()
    session.handle(
        pack("match_start", message_id=70, **{**MATCH_START, "match_id": match_id, **start})
    )
    for number in range(3):
        session.handle(msgpack.packb(decide_map(message_id=71 + number, match_id=match_id)))
    return list(bot.drawn)


def test_the_sdk_reseeds_the_bots_rng_from_every_match_start() -> None:
    """Protocol 1.1: the same seed gives the same draws whatever came before; another seed
    others; without a seed (a 1.0 referee) the stream just goes on."""
    bot = Drawer()
    session = welcomed(bot)
    first = _draws(session, bot, "m1", seed=12345)
    other = _draws(session, bot, "m2", seed=54321)
    again = _draws(session, bot, "m3", seed=12345)
    assert first == again
    assert first != other
    assert _draws(session, bot, "m4") != first  # no seed: not reseeded
    start = {**MATCH_START, "version": "1.1", "type": "match_start", "id": 5}
    assert parse_match_start({**start, "seed": 7}).seed == 7
    assert parse_match_start(start).seed is None
    for bad in (-1, 2**53, "7", 1.5, True):
        with pytest.raises(ProtocolError, match="seed"):
            parse_match_start({**start, "seed": bad})


def test_a_bot_may_bring_its_own_rng() -> None:
    bot = Drawer()
    bot.rng = random.Random(1)
    session = welcomed(bot)
    assert _draws(session, bot, "m1", seed=9) == _draws(session, bot, "m2", seed=9)


class NotARandom:
    """A generator of another kind (numpy's, say): no ``seed`` method."""

    def random(self) -> float:
        return 0.5


def test_a_generator_of_another_kind_is_left_for_the_bot_to_seed() -> None:
    bot = Drawer()
    bot.rng = NotARandom()  # type: ignore[assignment]
    session = welcomed(bot)
    assert _draws(session, bot, "m1", seed=9) == [0.5, 0.5, 0.5]  # no error, no forfeit
