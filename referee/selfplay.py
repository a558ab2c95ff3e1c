"""In-process play between policies: used by ``aegis-ref selfplay``, check-bot, tests and
benchmarks, through the match loop of :mod:`referee.rules.play`."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NoReturn

from referee.rules.actions import Action
from referee.rules.game import GameState, Observation, apply, legal_actions, observation
from referee.rules.match import MatchState, draw_first_master, new_match
from referee.rules.options import RulesOptions
from referee.rules.play import MatchCourse, Policy, PolicyPlayer, play_match

__all__ = [
    "POLICIES",
    "FirstLegalPolicy",
    "PlayedMatch",
    "RandomPolicy",
    "play_game",
    "play_policy_match",
]


class RandomPolicy:
    """Uniform over the legal actions, from its own seeded RNG."""

    def __init__(self, seed: int) -> None:
        self._rng = random.Random(seed)

    def __call__(self, seen: Observation, legal: Sequence[Action]) -> Action:
        # random() * n is uniform to within 2**-53 and several times cheaper than randrange.
        return legal[int(self._rng.random() * len(legal))]


class FirstLegalPolicy:
    """Always the first legal action: a fixed, trivial opponent for tests and benchmarks."""

    def __init__(self, seed: int = 0) -> None:
        del seed  # deterministic, accepted for a uniform constructor

    def __call__(self, seen: Observation, legal: Sequence[Action]) -> Action:
        return legal[0]


#: Built-in policies by name, each built from a seed.
POLICIES: dict[str, Callable[[int], Policy]] = {
    "random": RandomPolicy,
    "first": FirstLegalPolicy,
}


def play_game(game: GameState, policies: Sequence[Policy]) -> GameState:
    """Play one game to its end between policies, without a match around it: the engine's
    bare playout, for tests and the engine benchmark (a match goes through
    :func:`play_policy_match` and the match loop)."""
    while game.to_move is not None:
        seat = game.to_move
        game = apply(game, seat, policies[seat](observation(game, seat), legal_actions(game)))
    return game


@dataclass(frozen=True, slots=True)
class PlayedMatch:
    """A finished match and every game state at its end, in order."""

    seed: int
    match: MatchState
    games: tuple[GameState, ...]


def play_policy_match(options: RulesOptions, seed: int, policies: Sequence[Policy]) -> PlayedMatch:
    """Play one whole match between in-process policies, through the match loop
    (:func:`referee.rules.play.play_match`); all chance (the draw and the deals) comes from
    ``seed``."""
    rng = random.Random(seed)
    course: MatchCourse[NoReturn] = MatchCourse(
        "selfplay", ("0", "1"), seed, new_match(options, draw_first_master(rng))
    )
    play_match(course, rng, [PolicyPlayer(policy) for policy in policies])
    assert course.match is not None
    return PlayedMatch(seed, course.match, tuple(course.games))
