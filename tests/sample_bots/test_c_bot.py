"""The C sample bot (``sample_bots/c``): its own ``make check`` test, and real matches with
the referee. ``.ci/run`` installs the Debian packages and builds it; elsewhere it needs a C
compiler, make, pkg-config, libzmq3-dev and libmsgpack-dev."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from referee.rules.options import RulesOptions
from tests.sample_bots.language_bots import (
    SHORT,
    bot_dir,
    c_toolchain_missing,
    check_conversation,
    check_reject_and_arguments,
    check_remote_matches,
    check_remote_reconnects,
    play_both_seats,
    skip_unless_ci,
    wins,
)

C = bot_dir("c")


@pytest.fixture(scope="module", autouse=True)
def built() -> None:
    """The toolchain is there and the bot is built."""
    missing = c_toolchain_missing()
    if missing:
        skip_unless_ci(missing)
    subprocess.run(["make", "-s", "-C", str(C), "bot"], check=True, timeout=300)


def test_make_check() -> None:
    result = subprocess.run(
        ["make", "-s", "-C", str(C), "check"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    assert " 0 failed" in result.stdout


def test_plays_random_in_both_seats(tmp_path: Path) -> None:
    reports = play_both_seats("c", "random", [1, 2, 3], tmp_path)
    assert len(reports) == 6


def test_plays_other_rules_options(tmp_path: Path) -> None:
    # No exchange phase at all, and promise only from bid 4.
    options = RulesOptions(max_exchange_rounds=0, promise_min_bid=4)
    play_both_seats("c", "random", [4], tmp_path, options)


def test_at_least_as_good_as_random(tmp_path: Path) -> None:
    # 20 duplicate pairs of short matches; the bot wins nearly all, asking for 40% keeps luck out.
    reports = play_both_seats("c", "random", list(range(100, 120)), tmp_path, SHORT)
    assert wins(reports, "c") >= 0.4 * len(reports)


def test_plays_itself(tmp_path: Path) -> None:
    play_both_seats("c", "c", [9], tmp_path)


def test_conversation() -> None:
    check_conversation("c")


def test_reject_and_arguments() -> None:
    check_reject_and_arguments("c")


def test_plays_as_a_remote_bot_over_curve_zmq(tmp_path: Path) -> None:
    check_remote_matches("c", tmp_path)


def test_a_remote_bot_dials_in_again_when_its_connection_drops() -> None:
    check_remote_reconnects("c")
