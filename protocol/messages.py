"""Every protocol message as a frozen pydantic model; the JSON Schema is generated from these.

Field descriptions here flow into ``protocol/schema/``. What a bot sends is validated
strictly (no type coercion); unknown fields are ignored in both directions, as the spec says.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "ANY_MESSAGE",
    "BOT_MESSAGE",
    "CARD_PATTERN",
    "REFEREE_MESSAGE",
    "Act",
    "AnyMessage",
    "BidEvent",
    "BotMessage",
    "Decide",
    "ErrorMessage",
    "Event",
    "ExchangeEvent",
    "ExchangeRoundInfo",
    "Forfeit",
    "GameEndEvent",
    "GameStartEvent",
    "Hello",
    "MatchEnd",
    "MatchOutcome",
    "MatchStart",
    "Message",
    "ObservationInfo",
    "PassEvent",
    "Ping",
    "PlayEvent",
    "Pong",
    "Ready",
    "RefereeMessage",
    "Reject",
    "Shutdown",
    "StopEvent",
    "TimeControl",
    "TrickEvent",
    "TrickInfo",
    "Welcome",
]

#: A card code: rank (A, 2-10, J, Q, K) then suit letter (S, H, D, C), e.g. "10H".
CARD_PATTERN = r"^(A|[2-9]|10|J|Q|K)[SHDC]$"
#: An action in text form; see the spec for the grammar.
ACTION_PATTERN = r"^(stop|pass|bid [1-5]|play \S{2,3}|exchange( \S{2,3}){0,5})$"
MAX_ID = 2**53 - 1  # ids stay exact in JavaScript numbers
#: What ``welcome.heartbeat_ms`` means, as SPEC section 5 says it.
HEARTBEAT_MEANING = (
    "a bot that has been silent this long is pinged before it is given a match; a ping must "
    "be answered within this long. Pings come only between matches."
)

Card = Annotated[str, Field(pattern=CARD_PATTERN, description="A card code, e.g. '10H'.")]
SeatNumber = Annotated[int, Field(ge=0, le=1, description="A seat: 0 or 1.")]
MessageId = Annotated[int, Field(ge=0, le=MAX_ID)]
Score = Annotated[int, Field(ge=0)]
# Arrays, not tuples: msgpack decodes arrays as lists and strict validation keeps them so.
Pair = Annotated[list[Score], Field(min_length=2, max_length=2, description="By seat: [0, 1].")]
CardPair = Annotated[list[Card], Field(min_length=2, max_length=2)]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore", strict=True)


# ---------------------------------------------------------------------------------------------
# Shared parts


class TimeControl(_Model):
    """The clock of a match."""

    decision_ms: int = Field(gt=0, description="Time allowed for each decision, in ms.")
    bank_ms: int | None = Field(
        ge=0,
        description="Extra time for the whole match, drawn on when a decision overruns "
        "decision_ms; null when there is no bank (always present).",
    )
    warmup_ms: int = Field(
        ge=0, description="Extra time allowed for the handshake and for the first decision."
    )
    clock: Literal["cpu", "wall"] | None = Field(
        default=None,
        description="Since 1.2: what a decision is charged, and the unit of decision_ms, "
        "bank_ms and warmup_ms for a decision: 'cpu', the CPU time of every process and "
        "thread of the bot, or 'wall', the time from request to answer; absent: 'wall'.",
    )


class ExchangeRoundInfo(_Model):
    """The public card counts of one exchange round in which the master exchanged."""

    master: int = Field(ge=1, le=5, description="Cards the master exchanged.")
    slave: int | None = Field(
        ge=0, le=5, description="Cards the slave exchanged; null while the slave has not."
    )


class TrickInfo(_Model):
    """A finished trick."""

    leader: SeatNumber = Field(description="The seat that led.")
    cards: CardPair = Field(description="The card led, then the card that followed.")
    winner: SeatNumber = Field(description="The seat that won the trick and leads the next.")


class ObservationInfo(_Model):
    """Everything the receiving seat may know of the game in progress, and nothing else."""

    game: int = Field(ge=1, description="Game number within the match, from 1.")
    seat: SeatNumber = Field(description="The receiving bot's seat.")
    role: Literal["master", "slave"] = Field(description="The receiving bot's role this game.")
    master: SeatNumber = Field(description="The master's seat this game.")
    hand: list[Card] = Field(max_length=5, description="Own hand in canonical order.")
    key_card: Card = Field(description="The face-up key card; out of play (D2).")
    trump: Literal["S", "H", "D", "C"] = Field(description="Trump suit: the key card's suit.")
    killers: list[Card] = Field(
        min_length=3, max_length=3, description="The key card's rank in the three other suits."
    )
    phase: Literal["exchange", "bidding", "play", "over"] = Field(description="Game phase.")
    to_move: SeatNumber | None = Field(description="The seat to act; null when over.")
    exchange_rounds: list[ExchangeRoundInfo] = Field(
        max_length=4, description="Rounds in which the master exchanged, in order."
    )
    exchange_stopped: bool = Field(description="True if the master ended the phase by 'stop'.")
    master_exchange_count: int = Field(
        ge=0, le=4, description="Rounds the master exchanged in; its bid must exceed this."
    )
    stock_remaining: int = Field(ge=0, le=41, description="Cards left in the stock.")
    master_bid: int | None = Field(ge=1, le=5, description="The master's bid, once made.")
    slave_bid: int | None = Field(ge=2, le=5, description="The slave's overbid, if any.")
    slave_passed: bool = Field(description="True once the slave has passed.")
    attacker: SeatNumber | None = Field(description="The attacker, once bidding is over.")
    tricks: list[TrickInfo] = Field(max_length=5, description="Finished tricks, in order.")
    lead: Card | None = Field(description="The card led to the current trick, if any.")
    leader: SeatNumber = Field(description="The seat that leads (or led) the current trick.")
    tricks_won: Pair = Field(description="Tricks won so far, by seat.")
    scores: Pair = Field(description="Match scores before this game, by seat.")
    opponent_hand_size: int = Field(ge=0, le=5, description="Cards in the opponent's hand.")


# ---------------------------------------------------------------------------------------------
# Events: what happened since the receiving seat's last decision


class GameStartEvent(_Model):
    """A new game was dealt."""

    event: Literal["game_start"]
    game: int = Field(ge=1)
    master: SeatNumber
    key_card: Card
    hand: list[Card] = Field(max_length=5, description="Own hand as dealt.")
    scores: Pair = Field(description="Match scores before the game, by seat.")


class ExchangeEvent(_Model):
    """A seat exchanged ``count`` cards in exchange round ``round``."""

    event: Literal["exchange"]
    seat: SeatNumber
    round: int = Field(ge=1, le=4)
    count: int = Field(ge=0, le=5)


class StopEvent(_Model):
    """The master ended the exchange phase in round ``round``."""

    event: Literal["stop"]
    seat: SeatNumber
    round: int = Field(
        ge=1,
        le=4,
        description="The round the master stopped in, at most max_exchange_rounds (at most "
        "4): once the master has exchanged in every round, the phase is over and no stop "
        "comes.",
    )


class BidEvent(_Model):
    """A seat bid ``tricks``."""

    event: Literal["bid"]
    seat: SeatNumber
    tricks: int = Field(ge=1, le=5)


class PassEvent(_Model):
    """The slave passed."""

    event: Literal["pass"]
    seat: SeatNumber


class PlayEvent(_Model):
    """A seat played a card."""

    event: Literal["play"]
    seat: SeatNumber
    card: Card


class TrickEvent(_Model):
    """A trick was completed."""

    event: Literal["trick"]
    number: int = Field(ge=1, le=5)
    leader: SeatNumber
    cards: CardPair
    winner: SeatNumber


class GameEndEvent(_Model):
    """A game was scored."""

    event: Literal["game_end"]
    game: int = Field(ge=1)
    attacker: SeatNumber
    bid: int = Field(ge=1, le=5, description="The attacker's contract.")
    tricks_won: Pair
    points: Pair = Field(description="Points this game, by seat.")
    scores: Pair = Field(description="Match scores after the game, by seat.")
    promise: bool
    conquest: bool
    save: bool


Event = Annotated[
    GameStartEvent
    | ExchangeEvent
    | StopEvent
    | BidEvent
    | PassEvent
    | PlayEvent
    | TrickEvent
    | GameEndEvent,
    Field(discriminator="event"),
]


# ---------------------------------------------------------------------------------------------
# Messages


class Message(_Model):
    """Fields every message carries."""

    version: str = Field(
        max_length=16,
        description="Protocol version the sender speaks, 'MAJOR.MINOR'.",
    )
    id: MessageId = Field(
        description="Sender's message id: larger than the sender's previous one on the "
        "connection (the referee numbers from 1)."
    )


class Hello(Message):
    """Bot → referee, first message: who the bot is and which versions it speaks."""

    type: Literal["hello"]
    versions: list[Annotated[str, Field(max_length=16)]] = Field(
        min_length=1, max_length=16, description="Protocol versions the bot speaks."
    )
    name: str = Field(min_length=1, max_length=64, description="Bot name, for records.")
    author: str = Field(default="", max_length=128)
    bot_version: str = Field(default="", max_length=64)
    token: str = Field(
        default="",
        max_length=256,
        description="The secret the referee gave a started bot in AEGIS_TOKEN; empty for a "
        "remote bot (which authenticates by its CurveZMQ key).",
    )


class Welcome(Message):
    """Referee → bot, answers ``hello``: the version chosen and fixed settings."""

    type: Literal["welcome"]
    reply_to: MessageId
    protocol: str = Field(description="The version both sides speak from now on.")
    referee: str = Field(description="Referee software name and version.")
    heartbeat_ms: int = Field(gt=0, description=HEARTBEAT_MEANING)
    max_message_bytes: int = Field(gt=0, description="Largest message either side may send.")


class Reject(Message):
    """Referee → bot, answers ``hello``: refused; the bot should exit."""

    type: Literal["reject"]
    reply_to: MessageId | None
    code: Literal["version", "auth", "malformed"] = Field(description="See RejectCode.")
    reason: str
    supported_versions: list[str] = Field(description="Versions the referee speaks.")


class MatchStart(Message):
    """Referee → bot: a match begins. Answer with ``ready``."""

    type: Literal["match_start"]
    match_id: str = Field(max_length=128, description="Identifies the match in records.")
    seat: SeatNumber
    opponent: str = Field(
        description="The opponent's name as the organiser registered it (not its hello's name)."
    )
    rules: dict[str, int] = Field(description="The rules options of the match.")
    time_control: TimeControl
    seed: int | None = Field(
        default=None,
        ge=0,
        le=2**53 - 1,
        description="Since 1.1: the seed of this bot's own randomness in this match, "
        "derived from the tournament's seed, the match and the seat; reveals nothing of the "
        "deal while the tournament's seed is secret and large. A bot that draws all its "
        "randomness from it plays a match the same way every time.",
    )


class Ready(Message):
    """Bot → referee, answers ``match_start``."""

    type: Literal["ready"]
    reply_to: MessageId


class Decide(Message):
    """Referee → bot: choose an action. Answer with ``act`` before the deadline."""

    type: Literal["decide"]
    match_id: str
    decision: Literal["exchange", "bid", "play"]
    events: list[Event] = Field(description="What happened since this seat's last decision.")
    observation: ObservationInfo
    legal: list[Annotated[str, Field(pattern=ACTION_PATTERN)]] = Field(
        min_length=1, description="Every legal action in text form."
    )
    deadline_ms: int = Field(gt=0, description="Time for this decision, bank excluded.")
    bank_ms: int | None = Field(ge=0, description="Time bank left; null if none.")


class Act(Message):
    """Bot → referee, answers ``decide``: the chosen action in text form."""

    type: Literal["act"]
    reply_to: MessageId
    action: str = Field(max_length=64, description="e.g. 'play 10H', 'exchange 2S 7D', 'pass'.")


class Forfeit(_Model):
    """Why a match was ended by the referee."""

    seat: SeatNumber = Field(description="The seat that forfeited.")
    fault: str = Field(description="Fault kind, e.g. 'timeout', 'illegal_action', 'crash'.")
    detail: str = Field(description="Human-readable explanation.")


class MatchOutcome(_Model):
    """How a match ended."""

    winner: SeatNumber
    termination: Literal["target", "both_over_target", "cold", "forfeit"]
    scores: Pair
    games: int = Field(ge=0)
    forfeit: Forfeit | None = Field(description="Why the match was forfeited; null if it was not.")


class MatchEnd(Message):
    """Referee → bot: the match is over. No answer."""

    type: Literal["match_end"]
    match_id: str
    events: list[Event] = Field(description="What happened since this seat's last decision.")
    result: MatchOutcome


class Ping(Message):
    """Referee → bot: are you alive? Answer with ``pong``."""

    type: Literal["ping"]


class Pong(Message):
    """Bot → referee, answers ``ping``."""

    type: Literal["pong"]
    reply_to: MessageId


class Shutdown(Message):
    """Referee → bot: exit now. No answer."""

    type: Literal["shutdown"]
    reason: str


class ErrorMessage(Message):
    """Either way: a message could not be accepted."""

    type: Literal["error"]
    reply_to: MessageId | None = Field(description="The refused message's id, if known.")
    code: Literal[
        "malformed",
        "unknown_type",
        "wrong_reply_id",
        "illegal_action",
        "timeout",
        "version",
        "unexpected",
    ] = Field(description="See ErrorCode.")
    message: str = Field(max_length=4096)


BotMessage = Annotated[Hello | Ready | Act | Pong | ErrorMessage, Field(discriminator="type")]
RefereeMessage = Annotated[
    Welcome | Reject | MatchStart | Decide | MatchEnd | Ping | Shutdown | ErrorMessage,
    Field(discriminator="type"),
]
AnyMessage = Annotated[
    Hello
    | Welcome
    | Reject
    | MatchStart
    | Ready
    | Decide
    | Act
    | MatchEnd
    | Ping
    | Pong
    | Shutdown
    | ErrorMessage,
    Field(discriminator="type"),
]

BOT_MESSAGE: TypeAdapter[Any] = TypeAdapter(BotMessage)
REFEREE_MESSAGE: TypeAdapter[Any] = TypeAdapter(RefereeMessage)
ANY_MESSAGE: TypeAdapter[Any] = TypeAdapter(AnyMessage)
