"""Why a bot failed, in words: :func:`referee.faults.explain_fault` and its parts, the one
formatting every command uses."""

from __future__ import annotations

import sys

import pytest

from referee.faults import (
    Fault,
    FaultKind,
    explain_fault,
    fault_reason,
    last_output_line,
    module_hint,
    printable,
)

MISSING_SDK = (
    "Traceback (most recent call last):",
    '  File "/bots/x/bot.py", line 9, in <module>',
    "    from protocol.sdk import Bot, run",
    "ModuleNotFoundError: No module named 'protocol'",
)


def test_a_fault_says_who_what_where_and_the_last_output_line() -> None:
    fault = Fault(
        FaultKind.TIMEOUT,
        1,
        "slowpoke",
        "no act within 1000 ms",
        game=3,
        decision=7,
        stderr_tail=("thinking…", "still thinking", "  ", ""),
    )
    assert explain_fault(fault) == (
        "slowpoke (seat 1) timeout in game 3, decision 7: no act within 1000 ms; "
        "last output: 'still thinking'"
    )
    assert fault_reason(fault) == (
        "timeout in game 3, decision 7: no act within 1000 ms; last output: 'still thinking'"
    )


def test_a_fault_before_any_game_and_outside_a_match() -> None:
    """The handshake: before the first game; a server's fault not yet blamed on a seat (-1)
    names no seat; a bot that wrote nothing is quoted nothing."""
    fault = Fault(FaultKind.HANDSHAKE, -1, "mute", "no valid hello within 5000 ms")
    assert explain_fault(fault) == (
        "mute handshake before the first game: no valid hello within 5000 ms"
    )
    assert Fault(FaultKind.CRASH, 0, "b", "gone", game=2).where == "in game 2"


def test_what_a_bot_wrote_cannot_drive_the_terminal() -> None:
    """Escape sequences and other characters that do not print are shown escaped; a long
    line is cut, keeping its end."""
    fault = Fault(
        FaultKind.BOT_ERROR, 0, "evil", "said \x1b[2J\x1b]0;owned\x07", stderr_tail=("\x1b[31mred",)
    )
    text = explain_fault(fault)
    assert "\x1b" not in text
    assert "\x07" not in text
    assert "said \\x1b[2J\\x1b]0;owned\\x07" in text
    assert text.endswith("last output: '\\x1b[31mred'")
    assert printable("a\u202eb") == "a\\u202eb"  # right-to-left override
    long = "x" * 300 + "the end"
    assert printable(long) == "…" + long[-199:]
    assert last_output_line([long]) == "…" + long[-199:]
    assert last_output_line(["", "  "]) is None


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        (
            ("/opt/py/bin/python3.11", "bot.py"),
            "hint: it ran under /opt/py/bin/python3.11, which cannot import 'protocol': the "
            "Python SDK comes with aegis-ref, so start the bot with an interpreter that has "
            f"aegis-ref installed, such as the referee's: {sys.executable} (every bot gets its "
            "path in $AEGIS_PYTHON)",
        ),
        (
            ("./run",),
            "hint: the Python its command starts cannot import 'protocol': the Python SDK "
            "comes with aegis-ref",
        ),
        (
            (sys.executable, "bot.py"),
            f"hint: {sys.executable} is the referee's own interpreter, yet it cannot import "
            "'protocol'",
        ),
    ],
)
def test_a_python_bot_without_the_sdk_is_told_about_its_interpreter(
    command: tuple[str, ...], expected: str
) -> None:
    hint = module_hint(MISSING_SDK, command)
    assert hint is not None
    assert hint.startswith(expected), hint
    fault = Fault(FaultKind.HANDSHAKE, 0, "b", "process ended", stderr_tail=MISSING_SDK)
    assert fault_reason(fault, command).endswith(hint)
    assert hint not in fault_reason(fault, command, hint=False)


def test_other_missing_modules_and_other_output() -> None:
    tail = ["ModuleNotFoundError: No module named 'numpy.linalg'"]
    assert module_hint(tail, ("python3", "bot.py")) is not None
    assert "cannot import 'numpy': install it for that interpreter" in str(
        module_hint(tail, ("python3", "bot.py"))
    )
    assert module_hint(["Segmentation fault"], ("python3", "bot.py")) is None
    assert module_hint([], ()) is None


def test_a_fault_reads_back_from_its_json() -> None:
    fault = Fault(FaultKind.CRASH, 1, "c", "exit 9", 2, 5, ("boom",))
    assert Fault.from_json(fault.to_json()) == fault
    for broken in ({}, {"fault": "nonsense"}, {**fault.to_json(), "seat": "1"}):
        with pytest.raises(ValueError, match="not a fault"):
            Fault.from_json(broken)
