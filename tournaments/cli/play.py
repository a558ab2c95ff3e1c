"""``aegis-ref play BOT``: a person plays a match against a bot in the terminal.

The match itself is :func:`referee.human.play_human_match`: the bot is a real process over
the protocol and the rules engine decides everything. This module is the person's side:
it shows the hand (suit symbols, red and black, trumps underlined, killers starred), the key
card, bids and tricks as they happen and the running scores; it numbers the legal choices,
reads the answer and asks again, with the reason, until the engine accepts it.

Answers: a choice's number; or the action written out: a card to play (``7H``, ``10s``,
``Q♦``), the cards to discard (``2S 7D``), ``stop``, ``keep``, ``pass``, ``bid 3``;
``r`` or ``?`` for the rules, ``h`` for help, ``q`` to quit (after a confirmation). The end
of input (Ctrl-D) and Ctrl-C leave the match at once. Either way the bot is shut down.

The match runs on the wall clock (:mod:`referee.human`): the bot is charged wall time, the
person has no time limit; the introduction says so.

Exit codes: 0 the match was played to its end (won, lost, or won by the bot's forfeit);
1 the person left before the end; 2 a bot name that resolves to nothing or an unwritable
record.
"""

from __future__ import annotations

import enum
import secrets
import select
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any, TextIO

import typer
from rich.columns import Columns
from rich.console import Console
from rich.markdown import Markdown
from rich.text import Text

from referee.bundled import BotNameError, resolve_bot
from referee.human import HumanMatch, HumanMatchStart, HumanQuit, play_human_match
from referee.record_files import write_record
from referee.records import dumps_line
from referee.rules.actions import PASS, STOP, Action, Exchange, Pass, Play, Stop, parse_action, play
from referee.rules.cards import Card, parse_card
from referee.rules.errors import AegisError
from referee.rules.game import Observation, Phase, Role, Seat
from referee.rules.options import RulesOptions
from referee.sandbox import SandboxMode
from referee.time_control import TimeControl
from tournaments.cli.exit_codes import EXIT_LEFT, EXIT_USAGE
from tournaments.cli.interrupts import interrupts_kept
from tournaments.cli.options import (
    DEFAULT_TIME_CONTROL,
    NO_RULES_FLAGS,
    ColorOption,
    RulesFlags,
    SandboxOption,
    console_from_flag,
    decision_ms_flag,
    record_flag,
    sandbox_from_flag,
    warmup_ms_flag,
    with_rules_flags,
)
from tournaments.run.worker import reaped

__all__ = [
    "RULES_SUMMARY",
    "ChoiceError",
    "Command",
    "TerminalPlayer",
    "app",
    "parse_choice",
    "play_command",
    "read_input_line",
]

app = typer.Typer(no_args_is_help=True)


#: The rules in brief, shown by ``r`` or ``?``; RULES.md is the full rulebook.
RULES_SUMMARY = """\
# Aegis in brief

**Cards.** 52 cards. In a suit K > Q > J > 10 > … > 2, and the **Ace** beats K, Q and J but
loses to every number card.

**Deal.** The master and the slave get five cards each; the next card is turned face up:
the **key card**. Its suit is **trump**; the three cards of its rank in the other suits are
the **killers**. The key card stays out of play.

**Exchanges** (a few rounds). The master stops, which ends the exchanges, or discards 1-5
cards and draws as many; then the slave discards 0-5 cards and draws as many.

**Bidding.** The master bids from (rounds it exchanged in + 1) to 5 tricks; the slave passes
or bids more. The higher bidder **attacks**, the other **defends**.

**Play.** Five tricks; the master leads the first, the winner of a trick leads the next.
Follow the led suit if you can. The trick goes to: the higher card of the led suit; a trump
played by a player void in the led suit; a killer played on a trump lead by a player void in
trump; otherwise the leader.

**Scoring.** The attacker wins the game with at least its bid in tricks and scores the bid,
+1 for exactly the bid (promise), +1 for all five tricks (conquest). Otherwise the defender
scores the bid (+1 for all five). **Save:** if the master opened with 1 or 2 and the
defender took at least that many tricks, the defender scores the opening bid even when the
attacker wins.

**Match.** The first to the target score wins; so does a lead of the cold margin. The
master alternates every game.
"""

_HELP = """\
Answer with a choice's number, or write the action out:
  a card to play ........ 7H  10s  Q♦  (or: play 7H)
  cards to discard ...... 2S 7D        (or: exchange 2S 7D)
  stop / keep ........... end the exchanges (master) / discard nothing (slave)
  pass / bid 3 .......... in the bidding
  r or ? rules · h this help · q quit"""

_INPUT_SLICE = 0.2  # seconds between checks for Ctrl-C while waiting for a line
_SUIT_LETTERS = {"♠": "S", "♥": "H", "♦": "D", "♣": "C"}


class Command(enum.Enum):
    """An answer that is not an action."""

    RULES = "rules"
    HELP = "help"
    QUIT = "quit"


_COMMANDS = {
    "r": Command.RULES,
    "?": Command.RULES,
    "rules": Command.RULES,
    "h": Command.HELP,
    "help": Command.HELP,
    "q": Command.QUIT,
    "quit": Command.QUIT,
    "exit": Command.QUIT,
}


class ChoiceError(ValueError):
    """An answer that names no choice, card or command."""


def _parse_card(word: str) -> Card:
    code = word.upper()
    for symbol, letter in _SUIT_LETTERS.items():
        code = code.replace(symbol, letter)
    if len(code) == 2 and code[0] == "T":
        code = "10" + code[1]
    try:
        return parse_card(code)
    except AegisError:
        raise ChoiceError(
            f"{word!r} is neither a choice number nor a card (cards are written 7H, 10S, QD)"
        ) from None


def parse_choice(text: str, legal: Sequence[Action]) -> Action | Command:
    """The action or command an answer names; raise :class:`ChoiceError` if none.

    A number picks from ``legal`` (1-based). Written-out actions are returned as parsed:
    whether they are legal is the engine's to say.
    """
    words = text.replace(",", " ").split()
    if not words:
        raise ChoiceError(f"type a choice's number (1-{len(legal)}); r for the rules, q to quit")
    verb = words[0].lower()
    if len(words) == 1 and verb in _COMMANDS:
        return _COMMANDS[verb]
    if len(words) == 1 and verb.isascii() and verb.isdigit():
        number = int(verb[:9])
        if 1 <= number <= len(legal):
            return legal[number - 1]
        raise ChoiceError(f"there is no choice {verb}: choose 1-{len(legal)}")
    if len(words) == 1 and verb in ("stop", "pass"):
        return STOP if verb == "stop" else PASS
    if len(words) == 1 and verb in ("keep", "none"):
        return Exchange(())
    if verb == "bid":
        try:
            return parse_action(" ".join(words))
        except AegisError:
            raise ChoiceError("a bid is written 'bid N', N from 1 to 5") from None
    written = words[1:] if verb in ("play", "exchange", "discard") else words
    cards = [_parse_card(word) for word in written]
    phase_is_play = any(isinstance(action, Play) for action in legal)
    if verb == "play" or (verb not in ("exchange", "discard") and phase_is_play):
        if len(cards) != 1:
            raise ChoiceError("play one card, e.g. 7H")
        return play(cards[0])
    if not cards and verb not in ("exchange", "discard"):
        raise ChoiceError("name the cards to discard, e.g. 2S 7D")
    try:
        return Exchange(tuple(cards))
    except AegisError as error:
        raise ChoiceError(str(error)) from None


def read_input_line(stream: TextIO | None = None) -> str:
    """A line from standard input (or ``stream``), without its newline; EOFError at the end.

    On a terminal the wait is in short slices: a Ctrl-C that the kernel hands to another
    thread (a bot's output reader) would not interrupt a blocking read in this one, but is
    acted on at the end of the slice. A terminal in canonical mode delivers a line per read,
    so nothing is left buffered behind ``select``'s back.
    """
    stream = stream or sys.stdin
    if stream is None:
        raise EOFError
    if stream.isatty():
        while not select.select([stream], [], [], _INPUT_SLICE)[0]:
            pass
    line = stream.readline()
    if not line:
        raise EOFError
    return line.rstrip("\r\n")


class TerminalPlayer:
    """The human seat at a terminal: implements :class:`referee.human.HumanSeat`."""

    def __init__(self, console: Console, read_line: Callable[[], str] | None = None) -> None:
        self.console = console
        self._read_line = read_line or read_input_line
        self._symbols = console.encoding.lower().startswith("utf")
        self._start: HumanMatchStart | None = None
        self._hand: tuple[Card, ...] = ()
        self._contract_shown = False

    # -- names and cards ---------------------------------------------------------------------

    @property
    def start_info(self) -> HumanMatchStart:
        """The match's facts, once it has started."""
        assert self._start is not None
        return self._start

    def _name(self, seat: int) -> str:
        info = self.start_info
        return "you" if seat == info.human else info.players[seat]

    def _does(self, seat: int, verb_you: str, verb_bot: str) -> str:
        """``"you bid"`` / ``"first bids"``, capitalised for the start of a line."""
        if seat == self.start_info.human:
            return f"You {verb_you}"
        return f"{self.start_info.players[seat]} {verb_bot}"

    def card(self, card: Card, seen: Observation | None = None) -> Text:
        """A card: suit symbol, red or bold black; trumps underlined, killers starred."""
        text = Text(card.symbol if self._symbols else card.code)
        text.stylize("bold red" if card.suit.is_red else "bold")
        if seen is not None and card in seen.killers:
            text.stylize("underline")
            text.append("*", style="bold yellow")
        elif seen is not None and card.suit is seen.trump:
            text.stylize("underline")
        return text

    def cards(self, cards: Sequence[Card], seen: Observation | None = None) -> Text:
        """Cards separated by spaces, or a dash for none."""
        if not cards:
            return Text("—")
        return Text(" ").join(self.card(card, seen) for card in cards)

    def _scores(self, scores: Sequence[int]) -> str:
        info = self.start_info
        bot = info.bot
        return f"you {scores[info.human]} · {info.players[bot]} {scores[bot]}"

    # -- HumanSeat -------------------------------------------------------------------------

    def start(self, start: HumanMatchStart) -> None:
        """Introduce the match and the first-master draw."""
        self._start = start
        options = start.options
        bot = start.bot
        console = self.console
        console.print(
            Text(
                f"Aegis: you (seat {int(start.human)}) against {start.players[bot]} "
                f"(seat {int(bot)})",
                style="bold",
            )
        )
        console.print(
            f"Match to {options.target_score} points, or a lead of {options.cold_margin}; "
            f"seed {start.seed}."
        )
        control = start.time_control
        console.print(
            f"Clock: wall time. {start.players[bot]} has {control.decision_ms} ms a decision "
            f"({control.warmup_ms} ms more for its start and first decision); you have no "
            "time limit."
        )
        console.print(
            "Type a choice's number, or write it out (7H, 2S 7D, pass, bid 3). "
            "r or ? shows the rules, h help, q quits."
        )
        draw = Text("First-master draw: ")
        for seat in (start.human, bot):
            draw.append(f"{self._name(seat)} ")
            draw.append_text(self.card(start.first_draw[seat]))
            draw.append("  ")
        master = start.first_master
        draw.append(
            "→ you are the master of game 1"
            if master == start.human
            else f"→ {start.players[master]} is the master of game 1"
        )
        console.print(draw)

    def show(self, seen: Observation, events: list[dict[str, Any]]) -> None:
        """Print what happened since the last call."""
        for index, event in enumerate(events):
            kind = event["event"]
            if kind == "game_start":
                self._game_start(seen, event)
            elif kind == "exchange":
                self._exchange(seen, event)
            elif kind == "stop":
                self.console.print(
                    f"{self._does(event['seat'], 'stop', 'stops')} the exchanges "
                    f"(round {event['round']})."
                )
            elif kind == "bid":
                self.console.print(f"{self._does(event['seat'], 'bid', 'bids')} {event['tricks']}.")
            elif kind == "pass":
                self.console.print(f"{self._does(event['seat'], 'pass', 'passes')}.")
            elif kind == "play":
                following = events[index + 1] if index + 1 < len(events) else None
                if following is None or following["event"] != "trick":
                    line = Text(f"{self._does(event['seat'], 'lead', 'leads')} ")
                    line.append_text(self.card(parse_card(event["card"]), seen))
                    self.console.print(line)
            elif kind == "trick":
                self._trick(seen, event)
            elif kind == "game_end":
                self._game_end(event)
        if seen.attacker is not None and not self._contract_shown:
            self._contract_shown = True
            self._contract(seen)
        self._hand = seen.hand

    def choose(
        self, seen: Observation, legal: Sequence[Action], check: Callable[[Action], str | None]
    ) -> Action:
        """Show the situation and the numbered choices; read until the engine accepts."""
        self._situation(seen)
        self._choices(seen, legal)
        what = {Phase.EXCHANGE: "exchange", Phase.BIDDING: "bid", Phase.PLAY: "card"}
        prompt = f"Your {what.get(seen.phase, 'choice')} (1-{len(legal)}; r rules, q quit): "
        while True:
            answer = self._ask(prompt)
            try:
                choice = parse_choice(answer, legal)
            except ChoiceError as error:
                self._refuse(str(error))
                continue
            if choice is Command.RULES:
                self._rules()
            elif choice is Command.HELP:
                self.console.print(_HELP, highlight=False, markup=False)
                self._choices(seen, legal)
            elif choice is Command.QUIT:
                if self._confirm_quit():
                    raise HumanQuit
            else:
                reason = check(choice)
                if reason is None:
                    return choice
                self._refuse(reason)

    # -- reading ---------------------------------------------------------------------------

    def _ask(self, prompt: str) -> str:
        """One line of input; the end of input leaves the match."""
        self.console.print(Text(prompt, style="bold cyan"), end="")
        try:
            return self._read_line()
        except EOFError:
            self.console.print()
            self.console.print("End of input: leaving the match.")
            raise HumanQuit from None

    def _confirm_quit(self) -> bool:
        answer = self._ask("Leave the match? The bot will be stopped. [y/N]: ")
        return answer.strip().lower() in ("y", "yes")

    def _refuse(self, reason: str) -> None:
        self.console.print(Text(f"✗ {reason}" if self._symbols else f"x {reason}", style="red"))

    def _rules(self) -> None:
        options = self.start_info.options
        self.console.print(Markdown(RULES_SUMMARY))
        self.console.print(_options_text(options))

    # -- what happened -----------------------------------------------------------------------

    def _game_start(self, seen: Observation, event: dict[str, Any]) -> None:
        console = self.console
        self._contract_shown = False
        self._hand = tuple(parse_card(code) for code in event["hand"])
        console.print()
        console.rule(f"Game {event['game']}", style="bold")
        console.print(f"Scores: {self._scores(event['scores'])}")
        master = event["master"]
        if master == self.start_info.human:
            console.print("You are the master: you exchange, bid and lead first.")
        else:
            console.print(f"{self._name(master)} is the master; you are the slave.")
        key = Text("Key card ")
        key.append_text(self.card(seen.key_card))
        key.append(" · trump ")
        key.append(seen.trump.symbol if self._symbols else seen.trump.letter, style="bold")
        key.append(" · killers ")
        key.append_text(self.cards(seen.killers, seen))
        console.print(key)

    def _print_hand(self, seen: Observation, hand: Sequence[Card]) -> None:
        line = Text("Your hand: ", style="bold")
        line.append_text(self.cards(hand, seen))
        line.append("   (underlined: trump, *: killer)", style="dim")
        self.console.print(line)

    def _exchange(self, seen: Observation, event: dict[str, Any]) -> None:
        seat, count = event["seat"], event["count"]
        if seat != self.start_info.human:
            what = f"exchanges {count} card{'s' * (count != 1)}" if count else "keeps its cards"
            self.console.print(f"{self._name(seat)} {what} (round {event['round']}).")
            return
        if not count:
            self.console.print(f"You keep your cards (round {event['round']}).")
            return
        out = [card for card in self._hand if card not in seen.hand]
        drawn = [card for card in seen.hand if card not in self._hand]
        line = Text("You discard ")
        line.append_text(self.cards(out, seen))
        line.append(" and draw ")
        line.append_text(self.cards(drawn, seen))
        line.append(f" (round {event['round']}).")
        self.console.print(line)

    def _contract(self, seen: Observation) -> None:
        attacker = seen.attacker
        assert attacker is not None
        bid = seen.master_bid if seen.slave_bid is None else seen.slave_bid
        assert bid is not None
        tricks = f"{bid} trick{'s' * (bid != 1)}"
        if attacker == self.start_info.human:
            bot = self._name(attacker.other)
            text = f"You attack with {bid}: you need {tricks}; {bot} defends, needing {6 - bid}."
        else:
            text = (
                f"{self._name(attacker)} attacks with {bid}, needing {tricks}; you defend: "
                f"{6 - bid} trick{'s' * (bid != 5)} beat it."
            )
        self.console.print(Text(text, style="bold"))

    def _trick(self, seen: Observation, event: dict[str, Any]) -> None:
        leader, winner = event["leader"], event["winner"]
        lead, follow = (parse_card(code) for code in event["cards"])
        line = Text(f"Trick {event['number']}: {self._name(leader)} ")
        line.append_text(self.card(lead, seen))
        line.append(f", {self._name(1 - leader)} ")
        line.append_text(self.card(follow, seen))
        line.append(" → ")
        line.append(
            "you win it" if winner == self.start_info.human else f"{self._name(winner)} wins it",
            style="bold green" if winner == self.start_info.human else "bold",
        )
        line.append(f"   (tricks {self._scores(seen.tricks_won)})")
        self.console.print(line)

    def _game_end(self, event: dict[str, Any]) -> None:
        attacker, bid = event["attacker"], event["bid"]
        made = event["tricks_won"][attacker] >= bid
        bonuses = [name for name in ("promise", "conquest", "save") if event[name]]
        text = Text(f"Game {event['game']}: {self._name(attacker)} attacked with {bid} and ")
        text.append("made it" if made else "failed", style="bold")
        text.append(
            f"; points {self._scores(event['points'])}"
            + (f" ({', '.join(bonuses)})" if bonuses else "")
        )
        self.console.print(text)
        self.console.print(Text(f"Scores: {self._scores(event['scores'])}", style="bold"))

    # -- the decision ------------------------------------------------------------------------

    def _situation(self, seen: Observation) -> None:
        console = self.console
        bot = self.start_info.bot
        bot_name = self._name(bot)
        console.print()
        if seen.phase is Phase.EXCHANGE:
            round_number = len(seen.exchange_rounds) + (seen.role is Role.MASTER)
            limit = self.start_info.options.max_exchange_rounds
            if seen.role is Role.MASTER:
                console.print(
                    f"Exchange round {round_number} of {limit}: stop, or discard 1-5 cards "
                    "and draw as many."
                )
            else:
                count = seen.exchange_rounds[-1].master_count
                console.print(
                    f"Exchange round {round_number} of {limit}: {bot_name} exchanged {count}; "
                    "discard 0-5 cards and draw as many."
                )
        elif seen.phase is Phase.BIDDING:
            if seen.master_bid is None:
                floor = seen.master_exchange_count + 1
                console.print(
                    f"Bidding: you exchanged in {seen.master_exchange_count} round(s), so bid "
                    f"{floor} to 5 tricks."
                )
            else:
                console.print(f"Bidding: {bot_name} bid {seen.master_bid}; pass, or bid more.")
        elif seen.phase is Phase.PLAY:
            number = len(seen.tricks) + 1
            if seen.lead is None:
                console.print(
                    f"Trick {number}: your lead.   (tricks {self._scores(seen.tricks_won)})"
                )
            else:
                line = Text(f"Trick {number}: {bot_name} led ")
                line.append_text(self.card(seen.lead, seen))
                suit = seen.lead.suit.symbol if self._symbols else seen.lead.suit.letter
                line.append(f"; follow {suit} if you can.")
                console.print(line)
        self._print_hand(seen, seen.hand)

    def _choices(self, seen: Observation, legal: Sequence[Action]) -> None:
        entries = []
        for number, action in enumerate(legal, start=1):
            entry = Text(f"{number:>2}) ", style="cyan")
            entry.append_text(self._label(action, seen))
            entries.append(entry)
        self.console.print(Columns(entries, padding=(0, 3)))

    def _label(self, action: Action, seen: Observation) -> Text:
        if isinstance(action, Play):
            return self.card(action.card, seen)
        if isinstance(action, Stop):
            return Text("stop")
        if isinstance(action, Exchange):
            if not action.cards:
                return Text("keep all")
            return self.cards(action.cards, seen)
        if isinstance(action, Pass):
            return Text("pass")
        return Text(f"bid {action.tricks}")


def _options_text(options: RulesOptions) -> str:
    return (
        f"This match: target score {options.target_score}, cold margin {options.cold_margin}, "
        f"promise from bid {options.promise_min_bid}, "
        f"up to {options.max_exchange_rounds} exchange rounds. Full rules: RULES.md."
    )


def describe_end(outcome: HumanMatch, human: Seat) -> list[Text]:
    """The closing lines: a forfeit, the final score and the winner, or the abandonment."""
    report = outcome.report
    bot = human.other
    bot_name = report.players[bot]
    match = report.match
    assert match is not None
    lines: list[Text] = []
    if outcome.abandoned or match.result is None:
        lines.append(
            Text(
                f"Match abandoned after {match.games_played} game(s); scores you "
                f"{match.scores[human]} · {bot_name} {match.scores[bot]}. The bot was stopped.",
                style="bold yellow",
            )
        )
        return lines
    result = match.result
    fault = report.forfeit_fault
    if fault is not None:
        lines.append(Text(f"{bot_name} failed: {fault.describe()}", style="red"))
        for tail in fault.stderr_tail[-5:]:
            lines.append(Text(f"  | {tail}", style="dim"))
        lines.append(Text("You win by forfeit.", style="bold green"))
    lines.append(
        Text(
            f"Final score: you {result.scores[human]} · {bot_name} {result.scores[bot]} "
            f"after {result.games} finished game(s).",
            style="bold",
        )
    )
    if fault is None:
        winner = "You win" if result.winner == human else f"{bot_name} wins"
        lines.append(
            Text(
                f"{winner} the match ({result.termination.value}).",
                style="bold green" if result.winner == human else "bold red",
            )
        )
    return lines


@app.command("play")
@with_rules_flags
def play_command(
    bot: Annotated[
        str,
        typer.Argument(
            help="Your opponent: a bundled bot's name (random, first, …) or a quoted command "
            'line: "python3 my_bot.py".'
        ),
    ],
    seed: Annotated[
        int | None, typer.Option(help="Seed of the deals (default: a random one, shown).")
    ] = None,
    seat: Annotated[int, typer.Option(min=0, max=1, help="Your seat, 0 or 1.")] = 0,
    name: Annotated[str, typer.Option(help="Your name, as the bot and the record see it.")] = (
        "human"
    ),
    record: Annotated[
        Path | None, record_flag("Write the finished match's JSON Lines record here.")
    ] = None,
    decision_ms: Annotated[
        int, decision_ms_flag("The bot's deadline per decision.")
    ] = DEFAULT_TIME_CONTROL.decision_ms,
    warmup_ms: Annotated[
        int, warmup_ms_flag("Extra time for the bot's start-up and first decision.")
    ] = DEFAULT_TIME_CONTROL.warmup_ms,
    color: ColorOption = None,
    rules: RulesFlags = NO_RULES_FLAGS,
    sandbox: SandboxOption = SandboxMode.AUTO,
) -> None:
    """Play a match against a bot in the terminal.

    The match runs on the wall clock (your CPU time means nothing): the bot is charged the
    wall time you wait for it, within --decision-ms; you have no time limit.

    Exit 0 when the match was played to its end, 1 when you left it, 2 on a bad bot name or
    an unwritable record.
    """
    options = rules.options()
    try:
        spec = resolve_bot(bot)
    except BotNameError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(EXIT_USAGE) from None
    # markup=False: bot names and faults are shown as they are.
    console = console_from_flag(color, highlight=False, markup=False)
    human = Seat(seat)
    plan = sandbox_from_flag(sandbox, exit_code=EXIT_USAGE)
    # Ctrl-C leaves the match however the command was started: a SIGINT ignored by the
    # parent (a background job of a shell without job control) is not inherited here.
    with interrupts_kept():
        outcome = play_human_match(
            reaped(spec),
            TerminalPlayer(console),
            seed=secrets.randbits(32) if seed is None else seed,
            human_seat=human,
            human_name=name,
            options=options,
            time_control=TimeControl(decision_ms=decision_ms, warmup_ms=warmup_ms),
            sandbox=plan,
        )
    console.print()
    for line in describe_end(outcome, human):
        console.print(line)
    if not outcome.finished:
        raise typer.Exit(EXIT_LEFT)
    if record is not None:
        try:
            write_record(record, [dumps_line(line) for line in outcome.report.record_lines()])
        except OSError as error:
            typer.echo(f"cannot write record {record}: {error.strerror or error}", err=True)
            raise typer.Exit(EXIT_USAGE) from None
        console.print(f"record: {record}")
