"""The Python sample bots ``greedy``, ``strong`` and ``sparring`` (``sample_bots/greedy``, …):
real matches through the match runner, the strong bot's deadline, the greedy heuristics on
crafted hands, and the strong bot's world sampler and simulator against the engine."""

from __future__ import annotations

import dataclasses
import random
import re
import time
from pathlib import Path

import pytest

from referee.bundled import resolve_bot
from referee.cgroups import detect_cgroups
from referee.faults import explain_fault
from referee.preflight import preflight_bots
from referee.rules.actions import PASS, STOP, Bid, Exchange, play
from referee.rules.cards import Card, Suit, parse_card
from referee.rules.game import (
    STOCK_START,
    GameState,
    Observation,
    Phase,
    Seat,
    apply,
    legal_actions,
    new_game,
    observation,
    shuffled_deck,
)
from referee.rules.options import RulesOptions
from referee.runner import MatchReport, MatchRunner
from referee.sandbox import bubblewrap_problem, plan_sandbox
from referee.time_control import Clock, TimeControl
from sample_bots.greedy.bot import (
    ALL_CARDS,
    GreedyPlayer,
    bid_choice,
    card_mask,
    exchange_choice,
    play_choice,
)
from sample_bots.sparring.bot import DEFAULT_RANDOM, random_share
from sample_bots.strong.bot import (
    BUDGET_MARGIN_MS,
    BUDGET_SHARE,
    MatchOdds,
    SearchClock,
    Simulation,
    StrongPlayer,
    WorldSampler,
    opponent_voids,
)
from tests.processes import MachineWatch
from tests.referee.helpers import cards, deal, run, to_play_phase
from tests.sample_bots.language_bots import (
    SHORT,
    TIME_CONTROL,
    check,
    play_both_seats,
    wins,
)

DEFAULTS = RulesOptions()

# ---------------------------------------------------------------------------------------------
# Real matches


def test_greedy_plays_random_in_both_seats(tmp_path: Path) -> None:
    reports = play_both_seats("greedy", "random", [1, 2, 3], tmp_path)
    assert wins(reports, "greedy") >= 4  # it wins nearly all; 4 of 6 keeps luck out


def test_a_sparring_bot_with_fewer_random_actions_beats_one_with_more(tmp_path: Path) -> None:
    """The strength knob orders real bot processes: 10 % random actions against 90 %, in
    both seats of the same deals, set once by the environment and once by the argument."""
    base = resolve_bot("sparring")
    sharp = dataclasses.replace(base, name="sharp", env={"AEGIS_SPARRING_RANDOM": "0.1"})
    blunt = dataclasses.replace(base, name="blunt", command=(*base.command, "--random", "0.9"))
    reports = []
    with MatchRunner(time_control=TIME_CONTROL, log_dir=tmp_path) as runner:
        for seed in (11, 12, 13):
            for order, pair in enumerate(([sharp, blunt], [blunt, sharp])):
                report = runner.play(pair, seed, match_id=f"{seed}-{order}")
                check(report)
                reports.append(report)
    assert wins(reports, "sharp") >= 5  # greedy beats random in nearly every match


def test_the_sparring_share_comes_from_the_argument_then_the_environment() -> None:
    environment = {"AEGIS_SPARRING_RANDOM": "0.25"}
    assert random_share([], {}) == DEFAULT_RANDOM
    assert random_share([], environment) == 0.25
    assert random_share(["--random", "0.75"], environment) == 0.75
    assert random_share(["--random", "0"], {}) == 0.0


@pytest.mark.parametrize(
    ("arguments", "environment", "message"),
    [
        (["--random", "1.5"], {}, "--random must be a number from 0 to 1, got '1.5'"),
        ([], {"AEGIS_SPARRING_RANDOM": "lots"}, "AEGIS_SPARRING_RANDOM must be a number"),
    ],
)
def test_a_bad_sparring_share_is_refused_by_name(
    arguments: list[str],
    environment: dict[str, str],
    message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as stopped:
        random_share(arguments, environment)
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


def test_greedy_plays_other_rules_options(tmp_path: Path) -> None:
    options = RulesOptions(max_exchange_rounds=0, promise_min_bid=4)
    play_both_seats("greedy", "random", [4], tmp_path, options)


def test_strong_plays_random_in_both_seats(tmp_path: Path) -> None:
    reports = play_both_seats("strong", "random", [5, 6], tmp_path, SHORT)
    assert wins(reports, "strong") >= 3


@pytest.mark.skipif(bubblewrap_problem() is not None, reason="bubblewrap cannot sandbox here")
@pytest.mark.parametrize("name", ["random", "first", "greedy", "strong", "sparring"])
def test_each_bundled_python_bot_starts_in_its_sandbox(name: str) -> None:
    # strong imports greedy, outside its own folder: a sandbox showed only that folder.
    plan = plan_sandbox("required")
    (result,) = preflight_bots([resolve_bot(name)], warmup_ms=30_000, sandbox=plan)
    assert result.fault is None, explain_fault(result.fault)
    assert result.said == name


#: A bot that answers at once taking this long means the machine, not the bot, was slow.
STALLED_MS = 50.0
#: Runnable tasks kept waiting for a CPU this share of the time (the kernel's CPU pressure):
#: the machine was too busy for a wall-clock deadline to say anything about a bot.
BUSY_SHARE = 0.75
#: Pairs of matches played on the wall clock before concluding the machine stays busy.
WALL_ATTEMPTS = 4
#: A CPU-clock backstop whose recorded stall covers this share of its wall time: the
#: machine kept the bot from running for the whole of the capped backstop.
STARVED_SHARE = 0.9
_BACKSTOP = re.compile(r"wall-clock backstop: (\d+) ms.*the machine stalled it for (\d+) ms")


def _starved(report: MatchReport) -> bool:
    """Whether a bot of ``report`` met the CPU clock's capped backstop with the machine
    stalling it nearly all that time (the machine's doing, not the bot's)."""
    for fault in report.faults:
        found = _BACKSTOP.search(fault.detail)
        if found and int(found.group(2)) >= STARVED_SHARE * int(found.group(1)):
            return True
    return False


@pytest.mark.parametrize("clock", [Clock.WALL, Clock.CPU])
def test_strong_keeps_a_100_ms_deadline(tmp_path: Path, clock: Clock) -> None:
    """Strong searches for under a third of the deadline, less as it gets less of a CPU, so it
    answers well within 100 ms: on the wall clock its answers come within 100 ms; on the CPU
    clock (where the machine keeps it) the CPU time charged for them stays within 100 ms,
    however busy the machine (a pair in which the machine stalled a bot through the whole of
    the clock's capped backstop is played again: it says nothing of strong's CPU time; a
    machine that starves it through every attempt skips the case). On the wall clock a pair
    of matches counts only where the machine was not too busy to tell: greedy, strong's
    opponent, answers at once, so when it takes half the deadline (or more), or when
    runnable tasks waited for a CPU three quarters of the time or more, the pair is played
    again; on a machine that was not busy, any overrun of strong's fails. A machine busy
    through every attempt tells nothing of a wall deadline: the wall case is skipped there
    (such a machine is what the CPU clock is for)."""
    if clock is Clock.CPU and detect_cgroups().cpu_clock_problem() is not None:
        pytest.skip(f"no CPU clock here: {detect_cgroups().cpu_clock_problem()}")
    specs = [resolve_bot("strong"), resolve_bot("greedy")]
    control = TimeControl(decision_ms=100, warmup_ms=20000, clock=clock)
    for attempt in range(WALL_ATTEMPTS):
        watch = MachineWatch()
        with MatchRunner(time_control=control, log_dir=tmp_path / str(attempt)) as runner:
            reports = [
                runner.play(pair, 7, match_id=f"7-{order}")
                for order, pair in enumerate((specs, specs[::-1]))
            ]
        if clock is Clock.CPU:
            replay = any(_starved(report) for report in reports)
        else:
            busy = watch.busy_share()
            greedy = [ms for report in reports for ms in _times_of(report, "greedy")]
            replay = (
                max(greedy, default=0.0) >= STALLED_MS
                or any(fault.bot == "greedy" for report in reports for fault in report.faults)
                or (busy is not None and busy >= BUSY_SHARE)
            )
        if not replay:
            break
    else:
        pytest.skip(f"the machine was busy through {WALL_ATTEMPTS} pairs of matches")
    for report in reports:
        check(report)
    times = [ms for report in reports for ms in _times_of(report, "strong", charged=True)]
    assert len(times) > 10
    assert max(times) < 100, sorted(times)[-5:]
    if clock is Clock.CPU:
        charged = [charge for report in reports for charges in report.charges for charge in charges]
        assert None not in charged, "every decision charged by the CPU clock"


def _times_of(report: MatchReport, name: str, *, charged: bool = False) -> list[float]:
    """How long the bot called ``name`` took for each of its decisions, in ms: its wall
    time, or with ``charged`` what its clock charged where it charged CPU time."""
    seat = report.players.index(name)
    return [
        elapsed if not charged or charge is None else charge[0]
        for game, timings, charges in zip(report.games, report.timings, report.charges, strict=True)
        for turn, elapsed, charge in zip(game.history, timings, charges, strict=False)
        if turn.seat == seat
    ]


def test_the_search_shrinks_with_the_share_of_a_cpu_it_gets() -> None:
    """The budget is the deadline's share times the CPU share of the recent searches: whole
    on an idle machine, a third when the searches got a third of a CPU; a search too short
    to tell hardly moves it; searches with a CPU to themselves give the time back."""
    clock = SearchClock()
    whole = 100 * BUDGET_SHARE - BUDGET_MARGIN_MS
    assert clock.budget_ms(100) == whole  # nothing measured yet: the whole budget
    clock.note(cpu_s=0.010, wall_s=0.030)  # a third of a CPU
    assert clock.share == pytest.approx(1 / 3)
    assert clock.budget_ms(100) == pytest.approx(whole / 3)
    # On the CPU clock the machine's load costs nothing: the whole budget, whatever the share.
    assert clock.budget_ms(100, cpu_clock=True) == whole
    clock.note(cpu_s=0.0005, wall_s=0.0005)  # a tiny search that got a whole CPU
    assert clock.share < 0.36
    for _ in range(20):  # a long stretch of searches with the CPU to themselves
        clock.note(cpu_s=0.025, wall_s=0.025)
    assert clock.share > 0.99
    clock.note(cpu_s=0.001, wall_s=0.0)  # no time: nothing to learn
    assert clock.share > 0.99
    assert clock.budget_ms(10) <= 0  # too short a deadline to search at all
    assert SearchClock().budget_ms(10_000) == 100  # MAX_BUDGET_MS


# ---------------------------------------------------------------------------------------------
# Greedy heuristics on crafted hands

SPADES_TRUMP = (Suit.SPADES, 7)  # key card 7S: the killers are 7H, 7D and 7C


def follow(hand: str, lead: str, trump: Suit = Suit.SPADES, key_rank: int = 7) -> Card:
    """The greedy card played on ``lead`` (nothing seen but the hand and the lead)."""
    held = cards(hand)
    unseen = ALL_CARDS & ~card_mask(held)
    return play_choice(held, parse_card(lead), trump, key_rank, unseen, 5)


def test_follows_with_the_cheapest_winning_card() -> None:
    assert follow("KH 10H 3H 2S 5C", "9H") == parse_card("10H")


def test_the_ace_is_a_cheap_winner_over_a_jack_and_no_winner_over_a_ten() -> None:
    # The Ace beats J, Q and K only: over a jack it is the cheapest winner (it is worth
    # less than the queen later); over a ten it cannot win, and the lowest heart goes.
    assert follow("AH QH 4D 5C 6C", "JH") == parse_card("AH")
    assert follow("AH 3H 4D 5C 6C", "10H") == parse_card("3H")


def test_plays_a_killer_on_a_trump_lead_when_void_in_trump() -> None:
    assert follow("7H KD 2C 3C 9D", "QS") == parse_card("7H")


def test_trumps_a_plain_lead_when_void_with_the_lowest_trump() -> None:
    assert follow("3S KS 7H 2C 9C", "KD") == parse_card("3S")


def test_throws_the_least_useful_card_when_it_cannot_win() -> None:
    assert follow("QH 2H 5S 7D 9C", "KH") == parse_card("2H")  # must follow hearts
    assert follow("KD 2C 4D 8C 9C", "AS") == parse_card("2C")  # no trump, no killer


def test_leads_a_sure_winner_else_gives_the_lead_away_cheaply() -> None:
    trump, key_rank = SPADES_TRUMP
    strong_hand = cards("KS QS 2H 3D 4C")  # KS: only AS beats it, and AS is the key card
    gone = card_mask(strong_hand) | 1 << parse_card("AS").index
    assert play_choice(strong_hand, None, trump, key_rank, ALL_CARDS & ~gone, 5) in cards("KS QS")
    weak_hand = cards("2H 3D 4C 5C 6D")
    unseen = ALL_CARDS & ~card_mask(weak_hand)
    assert play_choice(weak_hand, None, trump, key_rank, unseen, 5) == parse_card("2H")


def test_exchanges_weak_cards_and_the_master_stops_with_a_strong_hand() -> None:
    trump, key_rank = SPADES_TRUMP
    strong_hand = cards("KS QS JS KH 7D")
    assert exchange_choice(strong_hand, trump, key_rank, True, 0) is None
    weak_hand = cards("2H 3H 4D 5C 9S")
    assert exchange_choice(weak_hand, trump, key_rank, True, 0) == cards("2H 3H 4D 5C")
    # Once the master has exchanged, it stops: each exchange raises its smallest bid.
    assert exchange_choice(weak_hand, trump, key_rank, True, 1) is None
    # The slave's exchanges are free, and never give up a trump, a killer, a king or queen.
    assert exchange_choice(cards("2H KH 7D QC 9S"), trump, key_rank, False, 1) == cards("2H")
    assert exchange_choice(strong_hand, trump, key_rank, False, 1) == ()


def test_bids_within_the_legal_range() -> None:
    trump, key_rank = SPADES_TRUMP
    weak_hand, strong_hand = cards("2H 3H 4D 5C 6C"), cards("KS QS JS 10S 9S")
    assert bid_choice(weak_hand, trump, key_rank, 3, None) == 3  # the floor, however poor
    assert bid_choice(strong_hand, trump, key_rank, 1, None) == 5
    assert bid_choice(weak_hand, trump, key_rank, 1, 1) is None  # the slave passes
    assert bid_choice(strong_hand, trump, key_rank, 1, 2) in (3, 4, 5)  # and overbids
    assert bid_choice(strong_hand, trump, key_rank, 1, 5) is None


def random_game(player: GreedyPlayer | None, seed: int, options: RulesOptions) -> GameState:
    """A game played by the greedy player in seat 0 (checked legal at every decision) and
    uniformly random legal actions in seat 1."""
    rng = random.Random(seed)
    game = new_game(options, Seat(seed % 2), shuffled_deck(rng))
    greedy = player or GreedyPlayer()
    while game.to_move is not None:
        seat, legal = game.to_move, legal_actions(game)
        if seat == Seat.FIRST:
            action = greedy.decide(observation(game, seat), legal)
            assert action in legal, (action, legal)
        else:
            action = legal[rng.randrange(len(legal))]
        game = apply(game, seat, action)
    return game


@pytest.mark.parametrize(
    "options", [DEFAULTS, RulesOptions(max_exchange_rounds=0), RulesOptions(max_exchange_rounds=1)]
)
def test_greedy_never_chooses_an_illegal_action(options: RulesOptions) -> None:
    for seed in range(300):
        assert random_game(None, seed, options).is_over


# ---------------------------------------------------------------------------------------------
# The strong bot's world sampler and simulator


def observations_of_seat_0(
    seed: int, exchanges: bool = True
) -> list[tuple[Observation, GameState]]:
    """Seat 0's observation at each of its decisions in a greedy game (with the true state),
    seat 0 being the slave, which always exchanges its weak cards."""
    rng = random.Random(seed)
    options = DEFAULTS if exchanges else RulesOptions(max_exchange_rounds=0)
    game = new_game(options, Seat.SECOND, shuffled_deck(rng))
    players = [GreedyPlayer(), GreedyPlayer()]
    seen: list[tuple[Observation, GameState]] = []
    while game.to_move is not None:
        seat = game.to_move
        view = observation(game, seat)
        if seat == Seat.FIRST:
            seen.append((view, game))
        game = apply(game, seat, players[seat].decide(view, legal_actions(game)))
    return seen


def test_the_world_sampler_deals_only_cards_the_bot_has_not_seen() -> None:
    checked_discards = 0
    for seed in range(100):
        player = GreedyPlayer()
        for view, game in observations_of_seat_0(seed):
            player.note_hand(view.game_number, view.hand)
            sampler = WorldSampler(view, player.held)
            own_discards = card_mask(game.discards[Seat.FIRST])
            checked_discards += bool(own_discards)
            played = 1 << view.key_card.index
            for trick in view.tricks:
                played |= 1 << trick.lead.index | 1 << trick.follow.index
            if view.lead is not None:
                played |= 1 << view.lead.index
            seen_elsewhere = card_mask(view.hand) | own_discards | played
            rng = random.Random(seed)
            for _world in range(20):
                hand, stock, discards = sampler.sample(rng)
                assert len(hand) == view.opponent_hand_size
                assert len(stock) == view.stock_remaining
                assert card_mask(hand) & seen_elsewhere == 0
                assert card_mask(stock) & seen_elsewhere == 0
                # The hidden cards are dealt exactly once: hand, stock and discards.
                dealt = card_mask(hand) | card_mask(stock) | card_mask(discards)
                assert len(hand) + len(stock) + len(discards) == dealt.bit_count()
                assert dealt == ALL_CARDS & ~seen_elsewhere
    assert checked_discards > 10  # the bot's own discards were there to be left out


def test_the_world_sampler_respects_voids() -> None:
    checked = 0
    for seed in range(200):
        player = GreedyPlayer()
        for view, _game in observations_of_seat_0(seed, exchanges=False):
            player.note_hand(view.game_number, view.hand)
            voids = opponent_voids(view)
            if not voids:
                continue
            checked += 1
            rng = random.Random(seed)
            sampler = WorldSampler(view, player.held)
            for _world in range(20):
                hand, _stock, _discards = sampler.sample(rng)
                assert not any(card.suit in voids for card in hand), (voids, hand)
    assert checked > 20


def test_the_simulator_plays_as_the_engine_does() -> None:
    # The greedy policy on both sides, with every card known: the simulator started at the
    # deal must end exactly where the engine ends.
    for seed in range(150):
        rng = random.Random(seed)
        options = RulesOptions(max_exchange_rounds=seed % 5)
        deck = shuffled_deck(rng)
        game = new_game(options, Seat(seed % 2), deck)
        start = observation(game, Seat.FIRST)
        players = [GreedyPlayer(), GreedyPlayer()]
        while game.to_move is not None:
            seat = game.to_move
            action = players[seat].decide(observation(game, seat), legal_actions(game))
            game = apply(game, seat, action)
        hands = [list(hand) for hand in new_game(options, Seat(seed % 2), deck).hands]
        held = [card_mask(hand) for hand in hands]
        simulation = Simulation(start, options, hands, held, list(deck[STOCK_START:]))
        result = simulation.finish(None)
        assert result == game.result, seed


def test_strong_is_deterministic_and_plays_legal_actions() -> None:
    for seed in range(4):
        for view, game in observations_of_seat_0(seed):
            legal = legal_actions(game)
            choices = {
                StrongPlayer(DEFAULTS, "7", max_worlds=8).decide(view, legal, time.monotonic() + 60)
                for _ in range(2)
            }
            assert len(choices) == 1
            assert choices.pop() in legal


def test_strong_returns_at_once_when_out_of_time() -> None:
    view, game = observations_of_seat_0(1)[0]
    player = StrongPlayer(DEFAULTS, "1")
    # Its own CPU time, not the wall clock: a busy machine may pause it, not make it search.
    cpu_before = time.thread_time()
    action = player.decide(view, legal_actions(game), time.monotonic() - 1)
    assert time.thread_time() - cpu_before < 0.05
    assert player.worlds == 0
    assert action == GreedyPlayer().decide(view, legal_actions(game))


def test_strong_finds_the_winning_line() -> None:
    # Spades are trump. The master bid 5 and won the first three tricks with KD, QD and JD;
    # it holds KS and QH, the slave 3S and 3C. Leading KS draws the slave's only trump and
    # QH wins too (5 tricks, 7 points); leading QH first lets the slave ruff it (4 tricks:
    # the bid fails). Leading KS is never worse, whatever the slave may hold.
    deck = deal("KS QH KD QD JD", "3S 3C 2D 4D 5D", "9S")
    game = to_play_phase(deck, master_bid=5)
    game = run(game, "play KD", "play 2D", "play QD", "play 4D", "play JD", "play 5D")
    assert game.to_move == Seat.FIRST
    view = observation(game, Seat.FIRST)
    player = StrongPlayer(DEFAULTS, "1", max_worlds=100)
    action = player.decide(view, legal_actions(game), time.monotonic() + 60)
    assert action == play(parse_card("KS"))


def test_exchange_and_bid_candidates_are_legal() -> None:
    for seed in range(6):
        for view, game in observations_of_seat_0(seed):
            if view.phase in (Phase.EXCHANGE, Phase.BIDDING):
                legal = legal_actions(game)
                action = StrongPlayer(DEFAULTS, "3", max_worlds=4).decide(
                    view, legal, time.monotonic() + 60
                )
                assert isinstance(action, Exchange | Bid) or action in (STOP, PASS)
                assert action in legal


def test_match_odds() -> None:
    odds = MatchOdds(DEFAULTS)
    assert 0.4 < odds.chance(0, 0, True) < 0.6
    assert odds.chance(20, 15, True) > odds.chance(15, 15, True) > odds.chance(15, 20, True)
    assert odds.over(25, 20, False) == 1.0  # the target
    assert odds.over(14, 4, False) == 1.0  # the cold margin
    assert odds.over(4, 14, True) == 0.0
    assert odds.over(26, 25, False) == 0.0  # D7: both over the target, the game's winner wins
    assert odds.over(24, 20, True) is None
