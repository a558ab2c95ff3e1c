"""A match: the first-master draw, games with the master alternating, scores and the end."""

from __future__ import annotations

import enum
import random
from collections.abc import Sequence
from dataclasses import dataclass

from referee.rules.cards import DECK, Card, draw_beats
from referee.rules.errors import IllegalActionError
from referee.rules.game import GameResult, GameState, Seat, new_game
from referee.rules.options import RulesOptions

__all__ = [
    "MatchResult",
    "MatchState",
    "Termination",
    "draw_first_master",
    "finish_game",
    "first_master",
    "forfeit",
    "new_match",
    "start_game",
]


class Termination(enum.Enum):
    """How a match ended."""

    #: Exactly one seat reached the target score.
    TARGET = "target"
    #: Both seats reached the target in the same game (only a save can do it); D7.
    BOTH_OVER_TARGET = "both_over_target"
    #: A seat led by the cold margin: a called game.
    COLD = "cold"
    #: A seat lost by a fault (timeout, crash, illegal action, …); decided by the referee.
    FORFEIT = "forfeit"


@dataclass(frozen=True, slots=True)
class MatchResult:
    """Who won a match, how, and the final scores (indexed by seat)."""

    winner: Seat
    termination: Termination
    scores: tuple[int, int]
    games: int

    @property
    def loser(self) -> Seat:
        """The seat that did not win."""
        return self.winner.other


@dataclass(frozen=True, slots=True)
class MatchState:
    """A match between seat 0 and seat 1: finished games and scores so far."""

    options: RulesOptions
    #: The cards each seat drew for the first master, indexed by seat.
    first_draw: tuple[Card, Card]
    first_master: Seat
    scores: tuple[int, int]
    results: tuple[GameResult, ...]
    result: MatchResult | None

    @property
    def is_over(self) -> bool:
        """True once the match has a winner."""
        return self.result is not None

    @property
    def games_played(self) -> int:
        """Number of finished games."""
        return len(self.results)

    @property
    def next_master(self) -> Seat:
        """The master of the next game: the first master, then alternating."""
        return self.first_master if len(self.results) % 2 == 0 else self.first_master.other


def first_master(first_draw: tuple[Card, Card]) -> Seat:
    """The seat whose drawn card is stronger (D1: ranks by the trick relation, so an Ace loses
    to a number card and beats a face card; equal ranks by suit order S > H > D > C)."""
    seat_0, seat_1 = first_draw
    if seat_0 is seat_1:
        raise IllegalActionError(f"both seats cannot draw the same card {seat_0}")
    return Seat.FIRST if draw_beats(seat_0, seat_1) else Seat.SECOND


def draw_first_master(rng: random.Random) -> tuple[Card, Card]:
    """Each seat draws one card from a freshly shuffled deck: seat 0 first."""
    first, second = rng.sample(DECK, 2)
    return first, second


def new_match(options: RulesOptions, first_draw: tuple[Card, Card]) -> MatchState:
    """A match before its first game."""
    return MatchState(
        options=options,
        first_draw=first_draw,
        first_master=first_master(first_draw),
        scores=(0, 0),
        results=(),
        result=None,
    )


def start_game(match: MatchState, deck: Sequence[Card]) -> GameState:
    """The next game of ``match``, dealt from ``deck``."""
    if match.result is not None:
        raise IllegalActionError("the match is over: no further game can start")
    return new_game(
        match.options,
        match.next_master,
        deck,
        game_number=len(match.results) + 1,
        scores_before=match.scores,
    )


def finish_game(match: MatchState, game: GameState) -> MatchState:
    """Add a finished game's points and decide whether the match is over.

    After each game: exactly one seat at the target wins; both at the target (D7): the
    winner of the game just played wins; otherwise a lead of the cold margin wins.
    """
    if game.result is None:
        raise IllegalActionError(f"game {game.game_number} is not finished")
    if game.game_number != len(match.results) + 1 or game.master != match.next_master:
        raise IllegalActionError(
            f"game {game.game_number} with master {game.master} is not the next game of this "
            f"match (expected game {len(match.results) + 1} with master {match.next_master})"
        )
    points = game.result.points
    scores = (match.scores[0] + points[0], match.scores[1] + points[1])
    results = (*match.results, game.result)
    options = match.options
    target = options.target_score
    over = [score >= target for score in scores]
    result: MatchResult | None = None
    if over[0] and over[1]:
        result = MatchResult(game.result.winner, Termination.BOTH_OVER_TARGET, scores, len(results))
    elif over[0] or over[1]:
        winner = Seat.FIRST if over[0] else Seat.SECOND
        result = MatchResult(winner, Termination.TARGET, scores, len(results))
    elif abs(scores[0] - scores[1]) >= options.cold_margin:
        winner = Seat.FIRST if scores[0] > scores[1] else Seat.SECOND
        result = MatchResult(winner, Termination.COLD, scores, len(results))
    return MatchState(options, match.first_draw, match.first_master, scores, results, result)


def forfeit(match: MatchState, offender: Seat) -> MatchState:
    """The match ended by the referee: ``offender`` loses whatever the scores."""
    if match.result is not None:
        raise IllegalActionError("the match is already over")
    offender = Seat(offender)
    result = MatchResult(offender.other, Termination.FORFEIT, match.scores, len(match.results))
    return MatchState(
        match.options, match.first_draw, match.first_master, match.scores, match.results, result
    )
