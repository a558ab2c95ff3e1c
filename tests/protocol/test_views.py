"""What a seat is told: random matches show that no message to a seat holds a card it may not
know, and that the events of successive messages rebuild every public field of the
observation (so one round trip per decision is enough)."""

from __future__ import annotations

import copy
import random
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from pydantic import TypeAdapter

from protocol.codec import encode
from protocol.examples_gen import example_policy
from protocol.messages import CARD_PATTERN, Decide, Event, MatchEnd
from protocol.version import PROTOCOL_VERSION
from protocol.views import EventTracker, decision_kind, legal_to_wire, observation_to_wire
from referee.rules.game import (
    GameState,
    Seat,
    apply,
    killers,
    legal_actions,
    observation,
    shuffled_deck,
)
from referee.rules.match import MatchState, draw_first_master, finish_game, new_match, start_game
from referee.rules.options import RulesOptions
from referee.selfplay import FirstLegalPolicy, Policy, RandomPolicy

from .strategies import EVENT_KINDS

CARD = re.compile(CARD_PATTERN)
EVENTS = TypeAdapter(list[Event])
DECISIONS = {"exchange": "exchange", "bidding": "bid", "play": "play"}
MATCHES_PER_BLOCK = 25


@dataclass
class View:
    """What one seat may know of one game at one moment, from the full state."""

    hand: set[str]
    allowed: set[str]  # cards the seat has held this game, and cards played to tricks
    forbidden: set[str]  # the opponent's hand and discards, the stock
    key_card: str
    killers: set[str]


def view_of(state: GameState, seat: Seat, held: set[str]) -> View:
    """The seat's knowledge in ``state``; ``held`` is every card it has held this game."""
    played = {str(card) for trick in state.tricks for card in (trick.lead, trick.follow)}
    if state.lead is not None:
        played.add(str(state.lead))
    other = seat.other
    forbidden = {str(card) for card in (*state.hands[other], *state.discards[other], *state.stock)}
    return View(
        hand={str(card) for card in state.hands[seat]},
        allowed=held | played,
        forbidden=forbidden,
        key_card=str(state.key_card),
        killers={str(card) for card in killers(state.key_card)},
    )


def cards_in(value: Any, key: str | None = None) -> Iterator[tuple[str | None, str]]:
    """Every card code in a message, anywhere (also inside action texts), with its field."""
    if isinstance(value, dict):
        for name, item in value.items():
            yield from cards_in(item, name)
    elif isinstance(value, list):
        for item in value:
            yield from cards_in(item, key)
    elif isinstance(value, str):
        for word in value.split(" "):
            if CARD.match(word):
                yield key, word


def check_cards(value: Any, view: View, where: str) -> int:
    """Assert that every card in ``value`` is one the seat may know; return how many."""
    count = 0
    for key, card in cards_in(value):
        count += 1
        if key == "killers":
            assert card in view.killers, where
        elif key == "key_card":
            assert card == view.key_card, where
        else:
            assert card not in view.forbidden, f"{where}: hidden card {card} in {key!r}"
            assert card in view.allowed, f"{where}: unknown card {card} in {key!r}"
    return count


@dataclass
class Replay:
    """A stateful bot's picture of the game, built from events alone."""

    seat: int
    game: int | None = None
    ended: bool = True
    public: dict[str, Any] = field(default_factory=dict)
    follow: str | None = None
    opponent_plays: int = 0

    def apply(self, event: dict[str, Any]) -> None:
        """Fold one event into the picture, checking it is consistent with what came before."""
        kind, state = event["event"], self.public
        if kind == "game_start":
            assert self.ended, "a game starts before the last one ended"
            self.game, self.ended, self.opponent_plays = event["game"], False, 0
            self.public = {
                "game": event["game"],
                "master": event["master"],
                "key_card": event["key_card"],
                "exchange_rounds": [],
                "exchange_stopped": False,
                "stock_remaining": 41,
                "master_bid": None,
                "slave_bid": None,
                "slave_passed": False,
                "tricks": [],
                "lead": None,
                "leader": event["master"],
                "tricks_won": [0, 0],
                "scores": event["scores"],
            }
            return
        assert not self.ended, f"{kind} outside a game"
        master = state["master"]
        rounds = state["exchange_rounds"]
        if kind == "exchange":
            if event["seat"] == master:
                assert event["round"] == len(rounds) + 1
                rounds.append({"master": event["count"], "slave": None})
            else:
                assert event["round"] == len(rounds)
                assert rounds[-1]["slave"] is None
                rounds[-1]["slave"] = event["count"]
            state["stock_remaining"] -= event["count"]
        elif kind == "stop":
            assert event["seat"] == master
            assert event["round"] == len(rounds) + 1
            state["exchange_stopped"] = True
        elif kind == "bid":
            state["master_bid" if event["seat"] == master else "slave_bid"] = event["tricks"]
        elif kind == "pass":
            assert event["seat"] != master
            state["slave_passed"] = True
        elif kind == "play":
            if state["lead"] is None:
                assert event["seat"] == state["leader"]
                state["lead"] = event["card"]
            else:
                assert event["seat"] != state["leader"]
                assert self.follow is None
                self.follow = event["card"]
            self.opponent_plays += event["seat"] != self.seat
        elif kind == "trick":
            trick = {"leader": state["leader"], "cards": [state["lead"], self.follow]}
            assert {key: event[key] for key in ("leader", "cards")} == trick
            assert event["number"] == len(state["tricks"]) + 1
            state["tricks"].append(trick | {"winner": event["winner"]})
            state["tricks_won"][event["winner"]] += 1
            state["lead"], self.follow, state["leader"] = None, None, event["winner"]
        elif kind == "game_end":
            assert event["game"] == self.game
            assert len(state["tricks"]) == 5
            assert event["tricks_won"] == state["tricks_won"]
            assert event["scores"] == [
                s + p for s, p in zip(state["scores"], event["points"], strict=True)
            ]
            self.ended = True
        else:  # pragma: no cover - a new event
            raise AssertionError(f"unknown event {kind}")

    def expected(self) -> dict[str, Any]:
        """The public fields of the observation, as the events imply them."""
        state = self.public
        master = state["master"]
        attacker = master if state["slave_passed"] else (1 - master if state["slave_bid"] else None)
        return state | {
            "master_exchange_count": len(state["exchange_rounds"]),
            "attacker": attacker,
            "opponent_hand_size": 5 - self.opponent_plays,
        }


def random_options(rng: random.Random) -> RulesOptions:
    """Short matches with every rules option varied."""
    return RulesOptions(
        target_score=rng.randint(3, 12),
        cold_margin=rng.randint(3, 10),
        promise_min_bid=rng.randint(1, 5),
        max_exchange_rounds=rng.randint(0, 4),
    )


def random_policy(rng: random.Random) -> Policy:
    """A random bot, the example bot (which stops and passes) or the first-legal bot."""
    choice = rng.randrange(4)
    if choice == 0:
        return example_policy
    if choice == 1:
        return FirstLegalPolicy()
    return RandomPolicy(rng.randrange(2**32))


@dataclass
class SeatLog:
    """The conversation of one seat, as the referee would hold it."""

    seat: Seat
    tracker: EventTracker = field(default_factory=EventTracker)
    replay: Replay = field(init=False)
    views: dict[int, View] = field(default_factory=dict)
    held: set[str] = field(default_factory=set)
    game: int | None = None  # of the last message sent
    messages: int = 0

    def __post_init__(self) -> None:
        self.replay = Replay(int(self.seat))

    def check_events(self, events: list[dict[str, Any]], where: str) -> int:
        """Check the cards of events against the game each belongs to, then replay them."""
        count = 0
        game = self.game
        for event in events:
            if event["event"] == "game_start":
                game = event["game"]
            assert game is not None, f"{where}: an event before any game_start"
            count += check_cards(event, self.views[game], f"{where}, event {event}")
            self.replay.apply(event)
        self.game = game
        return count


def play_checked_match(seed: int, seen_events: Counter[str]) -> tuple[int, int]:
    """Play one random match, checking every message to each seat; return (messages, cards)."""
    rng = random.Random(seed)
    options = random_options(rng)
    policies = (random_policy(rng), random_policy(rng))
    match: MatchState = new_match(options, draw_first_master(rng))
    logs = (SeatLog(Seat.FIRST), SeatLog(Seat.SECOND))
    messages = cards = 0
    while match.result is None:
        state = start_game(match, shuffled_deck(rng))
        for log in logs:
            log.held = set()
        while state.to_move is not None:
            seat = state.to_move
            log = logs[seat]
            for other in logs:
                other.held |= {str(card) for card in state.hands[other.seat]}
                other.views[state.game_number] = view_of(state, other.seat, other.held)
            seen = observation(state, seat)
            legal = legal_actions(state)
            log.tracker.observe(seen)
            message: dict[str, Any] = {
                "version": PROTOCOL_VERSION,
                "id": log.messages + 1,
                "type": "decide",
                "match_id": f"test-{seed}",
                "decision": decision_kind(seen),
                "events": log.tracker.take(),
                "observation": log.tracker.observation_map(seen),  # what the runner sends
                "legal": legal_to_wire(legal),
                "deadline_ms": 1000,
                "bank_ms": None,
            }
            log.messages += 1
            where = f"seed {seed}, game {state.game_number}, seat {seat}, decide {log.messages}"
            Decide.model_validate(message)
            encode(message)  # within the size limit
            cards += log.check_events(message["events"], where)
            view = log.views[state.game_number]
            cards += check_cards(message["observation"], view, where)
            cards += check_cards(message["legal"], view, where)
            observed = message["observation"]
            assert observed == observation_to_wire(seen), where
            assert set(observed["hand"]) == view.hand, where
            assert set(observed["killers"]) == view.killers, where
            assert all(card in view.hand for _, card in cards_in(message["legal"])), where
            assert message["decision"] == DECISIONS[observed["phase"]], where
            assert observed["to_move"] == observed["seat"] == seat, where
            expected = log.replay.expected()
            assert {key: observed[key] for key in expected} == expected, where
            seen_events.update(event["event"] for event in message["events"])
            messages += 1
            state = apply(state, seat, policies[seat](seen, legal))
        for log in logs:
            log.held |= {str(card) for card in state.hands[log.seat]}
            log.views[state.game_number] = view_of(state, log.seat, log.held)
            log.tracker.observe(observation(state, log.seat))
        match = finish_game(match, state)
    result = match.result
    for log in logs:
        end: dict[str, Any] = {
            "version": PROTOCOL_VERSION,
            "id": log.messages + 1,
            "type": "match_end",
            "match_id": f"test-{seed}",
            "events": log.tracker.take(),
            "result": {
                "winner": int(result.winner),
                "termination": result.termination.value,
                "scores": list(result.scores),
                "games": result.games,
                "forfeit": None,
            },
        }
        where = f"seed {seed}, match_end for seat {log.seat}"
        MatchEnd.model_validate(end)
        EVENTS.validate_python(end["events"])
        assert end["events"][-1]["event"] == "game_end", where
        cards += log.check_events(end["events"], where)
        assert log.replay.ended, where
        final = end["events"][-1]["scores"]
        assert final == list(match.scores) == end["result"]["scores"], where
        seen_events.update(event["event"] for event in end["events"])
        messages += 1
    return messages, cards


@pytest.mark.parametrize("block", range(8))
def test_random_matches_never_tell_a_seat_a_hidden_card(block: int) -> None:
    seen_events: Counter[str] = Counter()
    messages = cards = 0
    for seed in range(block * MATCHES_PER_BLOCK, (block + 1) * MATCHES_PER_BLOCK):
        sent, checked = play_checked_match(seed, seen_events)
        messages += sent
        cards += checked
    assert messages > 20 * MATCHES_PER_BLOCK
    assert cards > 10 * messages
    assert set(seen_events) == EVENT_KINDS  # every kind of event was checked


def test_the_checks_catch_a_leak() -> None:
    """The card check is not vacuous: an opponent's card planted in a message is caught."""
    rng = random.Random(7)
    state = start_game(new_match(RulesOptions(), draw_first_master(rng)), shuffled_deck(rng))
    seat = state.to_move
    assert seat is not None
    held = {str(card) for card in state.hands[seat]}
    view = view_of(state, seat, held)
    wire = observation_to_wire(observation(state, seat))
    check_cards(wire, view, "clean")
    for hidden in (state.hands[seat.other][0], state.stock[0], state.stock[-1]):
        leaked = wire | {"lead": str(hidden)}
        with pytest.raises(AssertionError, match="hidden card"):
            check_cards(leaked, view, "leaked")
        with pytest.raises(AssertionError, match="hidden card"):
            check_cards({"legal": [f"play {hidden}"]}, view, "leaked")


def test_a_trackers_observation_map_starts_afresh_for_another_game_or_seat() -> None:
    """The cached parts of the map are rebuilt when the observation is of another game, seat
    or match, even one with the same game number."""
    tracker = EventTracker()
    checked = 0
    for seed in range(30):
        rng = random.Random(seed)
        match = new_match(RulesOptions(target_score=6), draw_first_master(rng))
        while match.result is None:
            state = start_game(match, shuffled_deck(rng))
            policy = RandomPolicy(seed)
            while state.to_move is not None:
                for seat in (Seat.FIRST, Seat.SECOND):  # both seats through one tracker
                    seen = observation(state, seat)
                    assert tracker.observation_map(seen) == observation_to_wire(seen)
                    checked += 1
                seen = observation(state, state.to_move)
                state = apply(state, state.to_move, policy(seen, legal_actions(state)))
            match = finish_game(match, state)
    assert checked > 1000


def test_an_observation_map_is_not_changed_by_later_ones() -> None:
    """Maps handed out earlier (held in a log, say) keep their own lists of tricks."""
    rng = random.Random(3)
    state = start_game(new_match(RulesOptions(), draw_first_master(rng)), shuffled_deck(rng))
    tracker = EventTracker()
    maps: list[tuple[dict[str, Any], dict[str, Any]]] = []
    seens = []
    while state.to_move is not None:
        seen = observation(state, Seat.FIRST)
        seens.append(seen)
        built = tracker.observation_map(seen)
        maps.append((built, copy.deepcopy(built)))
        state = apply(state, state.to_move, legal_actions(state)[0])
    assert len(maps) > 10
    for built, snapshot in maps:
        assert built == snapshot
    for seen in reversed(seens):  # out of order too: the map is still the observation's
        assert tracker.observation_map(seen) == observation_to_wire(seen)
