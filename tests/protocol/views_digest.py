"""A digest of everything the engine and ``protocol.views`` say over many seeded games, so that
two builds of them (pure Python and compiled) can be compared by running this in each.

    python -m tests.protocol.views_digest   # prints {"build": ..., "digest": ...}
"""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

import msgpack

from protocol.views import EventTracker, decision_kind, legal_to_wire, observation_to_wire
from referee.build_info import hot_path_build
from referee.rules.game import Seat, apply, legal_actions, observation, shuffled_deck
from referee.rules.match import draw_first_master, finish_game, new_match, start_game
from referee.rules.options import RulesOptions

SEATS = (Seat.FIRST, Seat.SECOND)
MATCHES = 200


def digest(matches: int = MATCHES) -> str:
    """SHA-256 over every decision's kind, legal texts, observation map (both builders) and
    events, every game's end (events, hidden cards, turns, score) and every match's result,
    in random matches under several rule options."""
    hasher = hashlib.sha256()
    option_sets = [
        RulesOptions(),
        RulesOptions(target_score=10, max_exchange_rounds=1),
        RulesOptions(promise_min_bid=4, cold_margin=5),
    ]
    for number in range(matches):
        rng = random.Random(number)
        match = new_match(option_sets[number % len(option_sets)], draw_first_master(rng))
        trackers = [EventTracker(), EventTracker()]
        while match.result is None:
            game = start_game(match, shuffled_deck(rng))
            while game.to_move is not None:
                seat = game.to_move
                seen = observation(game, seat)
                tracker = trackers[seat]
                tracker.observe(seen)
                legal = legal_actions(game)
                record: list[Any] = [
                    decision_kind(seen),
                    legal_to_wire(legal),
                    observation_to_wire(seen),
                    tracker.observation_map(seen),
                    tracker.take(),
                ]
                hasher.update(msgpack.packb(record))
                game = apply(game, seat, legal[rng.randrange(len(legal))])
            for seat in SEATS:
                trackers[seat].observe(observation(game, seat))
                hasher.update(msgpack.packb(trackers[seat].take()))
            result = game.result
            assert result is not None
            hidden = [[str(card) for card in cards] for cards in (*game.hands, *game.discards)]
            turns = [(int(turn.seat), str(turn.action)) for turn in game.history]
            scored = [int(result.attacker), result.bid, list(result.points), result.save]
            hasher.update(msgpack.packb([hidden, turns, scored]))
            match = finish_game(match, game)
        assert match.result is not None
        hasher.update(msgpack.packb([int(match.result.winner), list(match.result.scores)]))
    return hasher.hexdigest()


if __name__ == "__main__":
    print(json.dumps({"build": hot_path_build(), "digest": digest()}))
