"""The bot manifest, ``aegis-bot.toml``: every problem reported with its file, line and key,
as a tournament config's are; the bundled bots' manifests."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from referee.bots import ResourceLimits
from referee.bundled import bundled_bot_names, sample_bots_dir
from tournaments.errors import ConfigError
from tournaments.league.manifest import key_lines, load_manifest, parse_manifest

GOOD = """\
name = "alpha"
version = "1.0"
author = "Ada"
language = "C"
build = "make bot"
run = "./bot --fast"
"""


def problems(text: str, **options: object) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_manifest(textwrap.dedent(text), **options)  # type: ignore[arg-type]
    return [str(issue) for issue in caught.value.issues]


def test_a_good_manifest() -> None:
    manifest = parse_manifest(GOOD)
    assert manifest.player == "alpha@1.0"
    assert manifest.run_argv == ("./bot", "--fast")
    assert manifest.build == "make bot"
    assert manifest.resource_limits(ResourceLimits()) == ResourceLimits()


def test_every_problem_with_its_line_and_key() -> None:
    found = problems(
        """\
        name = "al pha"
        version = 1.0
        author = ""
        language = "C"
        run = "./bot"
        colour = "blue"

        [limits]
        memory_mb = 8
        swap_mb = 1
        """
    )
    assert found == [
        "aegis-bot.toml:1: name: a bot name is 1 to 64 letters, digits, '_', '.' or '-', "
        "starting with a letter or digit, got 'al pha'",
        "aegis-bot.toml:2: version: should be a valid string, got 1.0",
        "aegis-bot.toml:3: author: should have at least 1 character, got ''",
        "aegis-bot.toml:6: colour: unknown key; known keys here: name, version, author, "
        "language, build, run, limits",
        "aegis-bot.toml:9: limits.memory_mb: should be greater than or equal to 16, got 8",
        "aegis-bot.toml:10: limits.swap_mb: unknown key; known keys here: cpu_seconds, "
        "address_space_mb, open_files, log_bytes, memory_mb, processes, tmp_mb, file_size_mb",
    ]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name = \n", "aegis-bot.toml:1: not valid TOML: Invalid value"),
        ('name = "a"\nname = "b"\n', "aegis-bot.toml:2: name: key given twice (first on line 1)"),
        (
            'name = "a"\nversion = "1"\nauthor = "x"\nlanguage = "y"\n',
            "aegis-bot.toml:1: missing required key 'run'",
        ),
        (
            GOOD.replace('"1.0"', '"1.0+build"'),
            "aegis-bot.toml:2: version: a version is 1 to 32 letters, digits",
        ),
        (GOOD.replace("./bot --fast", "../bot"), "aegis-bot.toml:6: run: program '../bot' is "),
        (
            GOOD.replace('"./bot --fast"', '"no-such-program-x1"'),
            "aegis-bot.toml:6: run: program 'no-such-program-x1' is not on the league's PATH",
        ),
        (GOOD.replace('"./bot --fast"', "[]"), "aegis-bot.toml:6: run: must be a command line"),
        (GOOD.replace('"./bot --fast"', "'\"unclosed'"), "aegis-bot.toml:6: run: cannot split"),
        (GOOD + "limits = { memory_mb = 4096 }\n", "aegis-bot.toml:7: limits.memory_mb: 4096"),
    ],
)
def test_single_problems(text: str, expected: str) -> None:
    found = problems(text, ceiling={"memory_mb": 2048})
    assert len(found) == 1, found
    assert found[0].startswith(expected), found


def test_limits_within_the_league_s_and_names_not_taken() -> None:
    text = GOOD + "\n[limits]\nmemory_mb = 4096\ntmp_mb = 128\n"
    assert problems(text, ceiling={"memory_mb": 2048, "tmp_mb": None}, taken={"alpha"}) == [
        "aegis-bot.toml:1: name: 'alpha' is the name of one of the league's own bots",
        "aegis-bot.toml:9: limits.memory_mb: 4096 is over the league's limit of 2048",
    ]
    manifest = parse_manifest(text, ceiling={"memory_mb": 8192})
    limits = manifest.resource_limits(ResourceLimits(memory_mb=1024, processes=50))
    assert (limits.memory_mb, limits.tmp_mb, limits.processes) == (4096, 128, 50)


def test_key_lines_of_tables_dotted_keys_inline_tables_and_long_strings() -> None:
    lines = key_lines(
        textwrap.dedent(
            """\
            build = \"\"\"
            run = "not a key"
            \"\"\"
            limits.tmp_mb = 5
            [limits]
            "memory_mb" = 1   # a comment
            other = { a = 1, b = 2 }
            """
        )
    )
    found = {path: line.key for path, line in lines.items()}
    assert ("run",) not in found
    assert found[("build",)] == 1
    assert found[("limits", "tmp_mb")] == 4
    assert found[("limits",)] == 4
    assert found[("limits", "memory_mb")] == 6
    assert found[("limits", "other", "b")] == 7


def test_a_missing_or_unreadable_manifest(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"no aegis-bot\.toml at the root"):
        load_manifest(tmp_path)
    (tmp_path / "aegis-bot.toml").write_bytes(b"name = \xff\n")
    with pytest.raises(ConfigError, match="cannot read it"):
        load_manifest(tmp_path)


@pytest.mark.parametrize("name", bundled_bot_names())
def test_every_bundled_bot_has_a_manifest(name: str) -> None:
    folder = sample_bots_dir() / name
    manifest = load_manifest(folder)
    assert manifest.name == name
    program = manifest.run_argv[0]
    if program.startswith("./") and name != "c":  # the C bot's binary is made by its build
        assert (folder / program).is_file()
