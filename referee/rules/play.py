"""The course of a match: the one loop that plays it, whoever the players are.

A bot process, a remote bot, an in-process policy, a person at a terminal and check-bot's
scripted opponent are all a :class:`Player`; the loop asks each seat in turn, applies what it
chose with the rules, and ends the match early when a player fails. A player's failure is a
value (a *fault*, of whatever type its players use), never an exception: the loop does not
look inside it, it only forfeits the match of the seat that returned it. Here, as everywhere
in :mod:`referee.rules`, there is no I/O, no clock and no randomness but the RNG passed in.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, NoReturn, Protocol, TypeVar, cast

from referee.rules.actions import Action, Bid, Exchange, Pass, Play, Stop
from referee.rules.errors import IllegalActionError
from referee.rules.game import (
    GameState,
    Observation,
    Seat,
    apply,
    legal_actions,
    observation,
    shuffled_deck,
)
from referee.rules.match import MatchState, finish_game, forfeit, start_game

__all__ = [
    "InProcessPlayer",
    "MatchCourse",
    "Player",
    "Policy",
    "PolicyPlayer",
    "play_match",
]

FaultT = TypeVar("FaultT")

_SEATS = (Seat.FIRST, Seat.SECOND)
#: An action's exact type, to tell an action from a fault with one look-up.
_ACTION_TYPES = frozenset({Stop, Exchange, Bid, Pass, Play})


class Player(Protocol[FaultT]):
    """One seat's side of a match, as the loop sees it.

    Every method that can fail returns the fault instead of raising. The loop stamps
    nothing on a fault: a player that wants its faults to say where they happened (game,
    decision) does so itself from the arguments.
    """

    #: How long the last action :meth:`decide` returned took, in ms (for the record).
    last_ms: float
    #: For a player on the CPU clock: the CPU ms charged for that action and the ms the
    #: machine stalled it meanwhile; None on the wall clock.
    last_charge: tuple[float, float] | None
    #: Whether :meth:`watch` wants every position (a person watching the game).
    watches: bool
    #: Whether :meth:`interrupted` may report a fault while the other seat is asked.
    interrupts: bool

    def ready(self) -> FaultT | None:
        """Before anything is sent: the fault if this player cannot play at all."""

    def start(self, match: MatchState, seat: Seat) -> FaultT | None:
        """The match begins, this player in ``seat``; the fault if it fails to start."""

    def decide(self, game: GameState, seat: Seat) -> Action | FaultT:
        """The action of ``seat``, which is to move in ``game``, or the fault."""

    def refused(
        self, game: GameState, seat: Seat, action: Action, error: IllegalActionError
    ) -> FaultT:
        """The rules refused ``action``: tell the player, and return its fault."""

    def interrupted(self, game: int, decision: int) -> FaultT | None:
        """A fault noticed while the other seat made ``decision`` of ``game``, if any."""

    def watch(self, game: GameState) -> None:
        """A new position: at each game's start and after every action (if :attr:`watches`)."""

    def game_over(self, game: GameState, seat: Seat) -> None:
        """A game of the match has ended (``game.to_move`` is None)."""

    def match_over(self, course: MatchCourse[FaultT], seat: Seat) -> None:
        """The match has ended (``course.match.result``), or is void (``course.void``)."""


class Policy(Protocol):
    """Chooses an action from the legal ones, given what its seat may see."""

    def __call__(self, seen: Observation, legal: Sequence[Action]) -> Action: ...


class InProcessPlayer:
    """A player that is never at fault (a policy, a person, a script): every hook does
    nothing, and an illegal action is a bug in its code, so the rules' error is raised.
    Subclasses override :meth:`decide` and whichever hooks they need."""

    last_ms = 0.0
    last_charge: tuple[float, float] | None = None
    watches = False
    interrupts = False

    def ready(self) -> None:
        """Always ready."""

    def start(self, match: MatchState, seat: Seat) -> None:
        """Nothing to set up."""

    def decide(self, game: GameState, seat: Seat) -> Action:
        """The action of ``seat``."""
        raise NotImplementedError

    def refused(
        self, game: GameState, seat: Seat, action: Action, error: IllegalActionError
    ) -> NoReturn:
        """In-process code that chooses an illegal action is a bug: raise the rules' error."""
        raise error

    def interrupted(self, game: int, decision: int) -> None:
        """Never interrupted."""

    def watch(self, game: GameState) -> None:
        """Not watching."""

    def game_over(self, game: GameState, seat: Seat) -> None:
        """Nothing to do."""

    def match_over(self, course: Any, seat: Seat) -> None:
        """Nothing to do."""


class PolicyPlayer(InProcessPlayer):
    """A :class:`Policy` as a player of the match loop."""

    def __init__(self, policy: Policy) -> None:
        self.policy = policy

    def decide(self, game: GameState, seat: Seat) -> Action:
        """The policy's choice, from what ``seat`` may see."""
        return self.policy(observation(game, seat), legal_actions(game))


@dataclass(slots=True)
class MatchCourse(Generic[FaultT]):
    """One match as it was played: its state, every game, timings and faults.

    :func:`play_match` fills it in as play goes on, so a match abandoned by an exception
    (a person quitting) still holds the games played so far.
    """

    match_id: str
    players: tuple[str, str]
    seed: int
    match: MatchState | None
    games: list[GameState] = field(default_factory=list)
    #: Per game, the decision time in ms of each action in ``history`` order.
    timings: list[list[float]] = field(default_factory=list)
    #: Per game, each action's ``last_charge`` (CPU ms charged, ms stalled), in the same order.
    charges: list[list[tuple[float, float] | None]] = field(default_factory=list)
    faults: list[FaultT] = field(default_factory=list)
    #: The fault that ended the match, if it was forfeited.
    forfeit_fault: FaultT | None = None
    #: Both players failed before the first game: no winner.
    void: bool = False

    @property
    def winner(self) -> Seat | None:
        """The winning seat, None for a void or unfinished match."""
        if self.match is None or self.match.result is None:
            return None
        return self.match.result.winner


def play_match(
    course: MatchCourse[FaultT], rng: random.Random, players: Sequence[Player[FaultT]]
) -> MatchCourse[FaultT]:
    """Play the match begun in ``course.match`` to its end; ``players`` by seat.

    The deals come from ``rng``, which must be the RNG that drew the first master (all
    chance in a match comes from one seed). Both players are asked :meth:`~Player.ready`,
    then both are started; a failure of one forfeits its match before the first game, of
    both makes it void. Later a fault forfeits the match of the seat it came from.
    """
    match = course.match
    assert match is not None, "begin the match first: new_match(options, draw_first_master(rng))"
    failed = [(seat, fault) for seat in _SEATS if (fault := players[seat].ready()) is not None]
    if not failed:
        failed = [
            (seat, fault)
            for seat in _SEATS
            if (fault := players[seat].start(match, seat)) is not None
        ]
    if failed:
        course.faults.extend(fault for _seat, fault in failed)
        course.forfeit_fault = failed[0][1]
        if len(failed) == 2:
            course.void = True
        else:
            course.match = forfeit(match, failed[0][0])
        return _over(course, players)
    watchers = [player for player in players if player.watches]
    while match.result is None:
        game = start_game(match, shuffled_deck(rng))
        timings: list[float] = []
        charges: list[tuple[float, float] | None] = []
        course.games.append(game)
        course.timings.append(timings)
        course.charges.append(charges)
        for watcher in watchers:
            watcher.watch(game)
        while game.to_move is not None:
            seat = game.to_move
            player = players[seat]
            chosen = player.decide(game, seat)
            if type(chosen) not in _ACTION_TYPES:
                return _forfeit(course, players, seat, cast(FaultT, chosen))
            action = cast(Action, chosen)
            try:
                after = apply(game, seat, action)
            except IllegalActionError as error:
                return _forfeit(course, players, seat, player.refused(game, seat, action, error))
            timings.append(player.last_ms)
            charges.append(player.last_charge)
            decision = len(game.history) + 1
            game = after
            course.games[-1] = game
            for watcher in watchers:
                watcher.watch(game)
            other = players[1 - seat]
            if other.interrupts:
                interruption = other.interrupted(game.game_number, decision)
                if interruption is not None:
                    return _forfeit(course, players, seat.other, interruption)
        for seat in _SEATS:
            players[seat].game_over(game, seat)
        match = finish_game(match, game)
        course.match = match
    return _over(course, players)


def _forfeit(
    course: MatchCourse[FaultT], players: Sequence[Player[FaultT]], seat: Seat, fault: FaultT
) -> MatchCourse[FaultT]:
    assert course.match is not None
    course.match = forfeit(course.match, seat)
    course.faults.append(fault)
    course.forfeit_fault = fault
    return _over(course, players)


def _over(course: MatchCourse[FaultT], players: Sequence[Player[FaultT]]) -> MatchCourse[FaultT]:
    for seat in _SEATS:
        players[seat].match_over(course, seat)
    return course
