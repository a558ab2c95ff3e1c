"""Config files: what resolves to what, and errors that name the line, the key and the value."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from referee.bundled import bundled_bot_names, sample_bots_dir
from referee.listeners import RemoteListener, generate_keys
from referee.rules.options import RulesOptions
from referee.seeds import derive_seed
from referee.time_control import TimeControl
from tests.tournaments.config_helpers import errors, load
from tournaments.config.tournament import DaskTLS, ExecutorSetup, load_config
from tournaments.errors import ConfigError

EXAMPLES = Path(__file__).resolve().parents[3] / "tournaments" / "examples"


def test_minimal_config_takes_the_defaults(tmp_path: Path) -> None:
    setup = load(
        tmp_path,
        """
        name: mini
        bots:
          - {name: a, command: random}
          - {name: b, command: first}
        """,
    )
    assert setup.bot_names == ("a", "b")
    assert setup.bots[0].command == (str(sample_bots_dir() / "random" / "run"),)
    assert setup.bots[1].command == (str(sample_bots_dir() / "first" / "run"),)
    assert setup.format == "round_robin"
    assert setup.matches_per_pair == 2
    assert setup.options == RulesOptions()
    assert setup.time_control == TimeControl()
    assert setup.concurrency == 1
    assert setup.seed is None  # the results store draws it
    assert setup.output == Path("results/mini")
    assert setup.anchor is None
    assert "AEGIS_SEED" not in setup.bots[0].env  # it waits for the seed


def test_a_seed_gives_each_bot_its_aegis_seed(tmp_path: Path) -> None:
    """An explicit seed derives AEGIS_SEED at once (as the store's seed does later), after
    the bot's own env and unless that gives one."""
    text = """
        name: seeded
        bots:
          - {name: a, command: random, env: {LEVEL: "3"}}
          - {name: b, command: first, env: {AEGIS_SEED: "5"}}
        """
    setup = load(tmp_path, text + "seed: 99\n")
    assert setup.seed == 99
    assert setup.bots[0].env == {"LEVEL": "3", "AEGIS_SEED": str(derive_seed(99, "bot", "a"))}
    assert list(setup.bots[0].env) == ["LEVEL", "AEGIS_SEED"]
    assert setup.bots[1].env == {"AEGIS_SEED": "5"}
    assert setup.with_seed(99) == setup
    with pytest.raises(ValueError, match="plays from seed 99, not 100"):
        setup.with_seed(100)
    drawn = load(tmp_path, text)
    assert drawn.seed is None
    assert drawn.with_seed(99) == setup
    assert load(tmp_path, text + "seed: null\n") == drawn


def test_commands_and_paths_resolve_against_the_config_directory(tmp_path: Path) -> None:
    bots = tmp_path / "bots"
    bots.mkdir()
    program = bots / "alpha"
    program.write_text("#!/bin/sh\n", encoding="utf-8")
    program.chmod(0o755)
    (tmp_path / "work").mkdir()
    setup = load(
        tmp_path,
        f"""
        name: paths
        bots:
          - name: alpha
            command: ./bots/alpha --fast "two words"
          - name: beta
            command: [{sys.executable}, bots/beta.py]
            env: {{AEGIS_SEED: "5", LEVEL: "3"}}
            limits: {{cpu_seconds: 10, address_space_mb: null}}
          - name: gamma
            command: ../bots/alpha
            cwd: work
        rules: {{target_score: 7}}
        time_control: {{decision_ms: 50, bank_ms: 1000, warmup_ms: 0}}
        matches_per_pair: 4
        concurrency: 3
        seed: 99
        output: out/here
        anchor: beta
        """,
    )
    alpha, beta, gamma = setup.bots
    assert alpha.command == (str(program), "--fast", "two words")
    assert alpha.cwd == str(tmp_path.resolve())
    assert beta.command == (sys.executable, "bots/beta.py")
    assert beta.env == {"AEGIS_SEED": "5", "LEVEL": "3"}
    assert beta.limits.cpu_seconds == 10
    assert beta.limits.address_space_mb is None
    assert beta.limits.open_files == 256
    assert gamma.cwd == str((tmp_path / "work").resolve())
    assert os.path.samefile(gamma.command[0], program)
    assert setup.options == RulesOptions(target_score=7)
    assert setup.time_control == TimeControl(50, 1000, 0)
    assert (setup.matches_per_pair, setup.concurrency, setup.seed) == (4, 3, 99)
    assert setup.output == Path("out/here")
    assert setup.anchor == "beta"
    overridden = setup.with_overrides(output=Path("/elsewhere"), concurrency=1)
    assert (overridden.output, overridden.concurrency) == (Path("/elsewhere"), 1)


def test_gauntlet(tmp_path: Path) -> None:
    setup = load(
        tmp_path,
        """
        name: g
        bots: [{name: a, command: first}, {name: b, command: random}, {name: c, command: random}]
        format: gauntlet
        gauntlet: [a]
        """,
    )
    assert (setup.format, setup.gauntlet) == ("gauntlet", ("a",))


def test_errors_name_line_key_and_value(tmp_path: Path) -> None:
    found = errors(
        tmp_path,
        """
        name: bad
        bots:
          - name: alpha
            command: random
          - name: beta
            command: 42
          - name: gamma
            comand: random
        format: swiss
        time_control:
          decision_ms: fast
        colour: blue
        """,
    )
    assert found == [
        "config.yaml:6: bots[1].command: must be a bundled bot's name, a command line string or "
        "a non-empty list of strings, got 42",
        "config.yaml:8: bots[2].comand: unknown key; known keys here: name, command, "
        "remote_key, connections, cwd, env, limits, keep_alive, read_only",
        "config.yaml:9: format: should be 'round_robin', 'gauntlet' or 'ladder', got 'swiss'",
        "config.yaml:11: time_control.decision_ms: should be a valid integer, got 'fast'",
        "config.yaml:12: colour: unknown key; known keys here: name, bots, format, gauntlet, "
        "ladder, matches_per_pair, rules, time_control, concurrency, seed, output, anchor, "
        "executor, listen, sandbox, freeze_opponent, submissions",
    ]


def test_cross_checks_name_line_key_and_value(tmp_path: Path) -> None:
    found = errors(
        tmp_path,
        """
        name: bad
        bots:
          - name: alpha
            command: random
          - name: alpha
            command: ./missing-bot
          - name: beta
            command: [no-such-program-anywhere, --x]
        format: gauntlet
        gauntlet: [alpha, zeta]
        matches_per_pair: 3
        rules: {target_score: 0, jokers: 2}
        anchor: nobody
        """,
    )
    assert found == [
        "config.yaml:5: bots[1].name: duplicate bot name 'alpha' (also bots[0])",
        f"config.yaml:6: bots[1].command: program './missing-bot' does not exist (looked for "
        f"{tmp_path.resolve()}/missing-bot)",
        "config.yaml:8: bots[2].command: 'no-such-program-anywhere' is neither a bundled bot "
        f"({', '.join(bundled_bot_names())}) nor a program on PATH",
        "config.yaml:10: gauntlet[1]: unknown bot 'zeta'; bots: alpha, beta",
        "config.yaml:11: matches_per_pair: 3 is odd: matches come in duplicate pairs (same "
        "seed, seats swapped), so give an even number such as 4",
        "config.yaml:12: rules.target_score: rules option target_score must be between 1 and "
        "1000, got 0",
        "config.yaml:12: rules.jokers: unknown rules option; known: target_score, cold_margin, "
        "promise_min_bid, max_exchange_rounds",
        "config.yaml:13: anchor: unknown bot 'nobody'; bots: alpha, beta",
    ]


TWO_BOTS = "name: x\nbots: [{name: a, command: random}, {name: b, command: random}]\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "config.yaml:1: the file is empty: expected a mapping"),
        ("- a\n- b\n", "config.yaml:1: a config is a mapping of keys"),
        ("name: x\nbots: [\n", "config.yaml:3: not valid YAML"),
        ("name: x\nname: y\n", "config.yaml:2: name: key given twice (first on line 1)"),
        (
            "name: x\nbots:\n  - {command: random}\n  - {name: b, command: random}\n",
            "config.yaml:3: bots[0]: missing required key 'name'",
        ),
        (
            "name: x\nbots: [{name: a, command: random}]\n",
            "config.yaml:2: bots: a tournament needs at least 2 bots, got 1 (or a "
            "'submissions' folder, whose bots play too)",
        ),
        (
            "name: x\nbots:\n  - {name: a b, command: random}\n  - {name: b, command: random}\n",
            "config.yaml:3: bots[0].name: a bot name is 1 to 64 letters",
        ),
        (
            "name: x\nbots:\n  - {name: a}\n  - {name: b, command: random}\n",
            "config.yaml:3: bots[0]: give exactly one of 'command' (a bot to start) or "
            "'remote_key'",
        ),
        (
            "name: x\nbots: [{name: a, command: random}, {name: b, command: random}]\n"
            "gauntlet: [a]\n",
            "config.yaml:3: gauntlet: only used with format: gauntlet",
        ),
        (
            "name: x\nbots: [{name: a, command: random}, {name: b, command: random}]\n"
            "format: gauntlet\n",
            "config.yaml:3: format: format gauntlet needs a 'gauntlet' list",
        ),
        (
            "name: x\nbots: [{name: a, command: random}, {name: b, command: random}]\n"
            "concurrency: 0\n",
            "config.yaml:3: concurrency: should be greater than or equal to 1, got 0",
        ),
        (
            "name: x\nbots: [{name: a, command: random}, {name: b, command: random}]\n"
            "matches_per_pair: true\n",
            "config.yaml:3: matches_per_pair: should be a valid integer, got true",
        ),
        (
            "name: x\nbots: [{name: a, command: random}, {name: b, command: 'x \"y'}]\n",
            "config.yaml:2: bots[1].command: cannot split the command line",
        ),
        (
            f"{TWO_BOTS}executor: dask\n",
            "config.yaml:3: executor: kind dask needs exactly one of 'address' "
            "(tcp://host:8786) or 'scheduler_file'",
        ),
        (
            f"{TWO_BOTS}executor: spark\n",
            "config.yaml:3: executor.kind: should be 'local' or 'dask', got 'spark'",
        ),
        (
            f"{TWO_BOTS}executor:\n  kind: dask\n  address: http://h:1\n",
            "config.yaml:5: executor.address: a Dask scheduler address is tcp://HOST:PORT",
        ),
        (
            f"{TWO_BOTS}executor:\n  kind: local\n  address: tcp://h:1\n",
            "config.yaml:5: executor.address: only used with kind: dask",
        ),
        (
            f"{TWO_BOTS}executor:\n  kind: dask\n  adress: tcp://h:1\n",
            "config.yaml:5: executor.adress: unknown key; known keys here: kind, address, "
            "scheduler_file, tls, connect_timeout_s, batch_size, affinity",
        ),
        (
            f"{TWO_BOTS}executor: {{kind: dask, address: 'tcp://h:1', affinity: false}}\n",
            "config.yaml:3: executor.affinity: only used with kind: local",
        ),
        (
            f"{TWO_BOTS}executor: {{kind: local, affinity: 1}}\n",
            "config.yaml:3: executor.affinity: should be a valid boolean, got 1",
        ),
        (
            f"{TWO_BOTS}executor:\n  kind: dask\n  address: tls://h:1\n  tls:\n"
            "    ca_file: ca.pem\n    cert: me.pem\n    keys: me.key\n",
            "config.yaml:9: executor.tls.keys: unknown key; known keys here: ca_file, cert, key",
        ),
        (
            f"{TWO_BOTS}executor: {{kind: local, batch_size: 2}}\n",
            "config.yaml:3: executor.batch_size: only used with kind: dask",
        ),
        (
            f"{TWO_BOTS}executor: {{kind: dask, address: 'tcp://h:1', connect_timeout_s: 0}}\n",
            "config.yaml:3: executor.connect_timeout_s: should be greater than or equal to 1",
        ),
    ],
)
def test_single_errors(tmp_path: Path, text: str, expected: str) -> None:
    found = errors(tmp_path, text)
    assert len(found) == 1, found
    assert found[0].startswith(expected), found


def test_unreadable_config(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the config: No such file"):
        load_config(tmp_path / "absent.yaml")


def test_executor_keys(tmp_path: Path) -> None:
    """``executor`` defaults to the local pool; a Dask scheduler by address (TLS files
    resolved against the config's directory) or by scheduler file; ``--local-cluster``."""
    assert load(tmp_path, TWO_BOTS).executor == ExecutorSetup()
    assert load(tmp_path, TWO_BOTS + "executor: local\n").executor == ExecutorSetup()
    assert ExecutorSetup().affinity  # the local pool pins its workers unless told not to
    unpinned = load(tmp_path, TWO_BOTS + "executor: {kind: local, affinity: false}\n")
    assert unpinned.executor == ExecutorSetup(affinity=False)
    (tmp_path / "tls").mkdir()
    for name in ("ca.pem", "me.pem"):
        (tmp_path / "tls" / name).write_text("-----BEGIN CERTIFICATE-----\n")
    setup = load(
        tmp_path,
        TWO_BOTS + "executor:\n  kind: dask\n  address: tls://[::1]:8786\n"
        "  tls: {ca_file: tls/ca.pem, cert: tls/me.pem}\n  connect_timeout_s: 5\n",
    )
    assert setup.executor == ExecutorSetup(
        kind="dask",
        address="tls://[::1]:8786",
        tls=DaskTLS(tmp_path / "tls" / "ca.pem", tmp_path / "tls" / "me.pem"),
        connect_timeout_s=5.0,
    )
    assert setup.executor.is_dask
    by_file = load(tmp_path, TWO_BOTS + "executor: {kind: dask, scheduler_file: s.json}\n")
    assert by_file.executor.scheduler_file == tmp_path / "s.json"  # need not exist yet
    assert by_file.executor.address is None
    local = by_file.with_overrides(local_cluster=3).executor
    assert local == ExecutorSetup(kind="dask", local_workers=3)
    batched = load(
        tmp_path, TWO_BOTS + "executor: {kind: dask, address: 'tcp://h:1', batch_size: 4}\n"
    )
    assert batched.executor.batch_size == 4
    assert batched.with_overrides(local_cluster=2).executor.batch_size == 4
    found = errors(
        tmp_path,
        TWO_BOTS + "executor:\n  kind: dask\n  address: tcp://h:1\n"
        "  tls: {ca_file: tls/none.pem, cert: tls/me.pem}\n",
    )
    assert found == [
        "config.yaml:5: executor.address: the 'tls' files need a tls:// address",
        f"config.yaml:6: executor.tls.ca_file: file 'tls/none.pem' does not exist (looked for "
        f"{tmp_path}/tls/none.pem)",
    ]


REMOTE_KEY = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7"
WITH_REMOTE = (
    "name: x\nbots:\n  - {name: a, command: random}\n"
    f"  - {{name: far, remote_key: '{REMOTE_KEY}'}}\n"
)


def write_key(tmp_path: Path) -> tuple[str, str]:
    """A referee key pair, the secret written to referee.key as ``aegis-ref keygen`` does."""
    public, secret = generate_keys()
    (tmp_path / "referee.key").write_text(secret + "\n", encoding="ascii")
    return public, secret


def test_remote_bots_dial_in_where_listen_says(tmp_path: Path) -> None:
    public, secret = write_key(tmp_path)
    setup = load(
        tmp_path,
        WITH_REMOTE + "listen:\n  port: 7100\n  key_file: referee.key\n  connect_timeout_s: 5\n",
    )
    assert setup.bots[1].is_remote
    assert setup.bots[1].curve_public_key == REMOTE_KEY
    assert setup.listen == RemoteListener("0.0.0.0", 7100, public, secret)
    assert setup.remote_connect_s == 5.0
    assert setup.bots[1].connections == 1
    local_only = load(
        tmp_path, TWO_BOTS + "listen: {host: 127.0.0.1, port: 7100, key_file: referee.key}\n"
    )
    assert local_only.listen is None  # nothing dials in: the referee does not listen


def test_remote_bots_play_concurrently_and_on_a_cluster(tmp_path: Path) -> None:
    """A remote bot may play several matches at once (``connections``), in a tournament of
    any concurrency, on the local executor or a Dask cluster."""
    write_key(tmp_path)
    listen = "listen: {port: 7100, key_file: referee.key, advertise: coordinator.example}\n"
    text = (
        WITH_REMOTE.replace("remote_key:", "connections: 3, remote_key:")
        + "concurrency: 4\nexecutor: {kind: dask, address: 'tcp://h:1'}\n"
        + listen
    )
    setup = load(tmp_path, text)
    assert setup.bots[1].connections == 3
    assert setup.concurrency == 4
    assert setup.listen_advertise == "coordinator.example"
    found = errors(tmp_path, text.replace("connections: 3", "connections: 0"))
    assert found == [
        "config.yaml:4: bots[1].connections: should be greater than or equal to 1, got 0"
    ]


def test_key_pair_mix_ups_are_named(tmp_path: Path) -> None:
    public, _ = write_key(tmp_path)
    (tmp_path / "referee.key.pub").write_text(public + "\n", encoding="ascii")
    assert load(tmp_path, WITH_REMOTE + "listen: {port: 7100, key_file: referee.key}\n").listen
    found = errors(tmp_path, WITH_REMOTE + "listen: {port: 7100, key_file: referee.key.pub}\n")
    assert found == [
        f"config.yaml:5: listen.key_file: {tmp_path}/referee.key.pub is a public key; give "
        "the secret key file (without .pub)"
    ]
    (tmp_path / "referee.key.pub").write_text(generate_keys()[0] + "\n", encoding="ascii")
    found = errors(tmp_path, WITH_REMOTE + "listen: {port: 7100, key_file: referee.key}\n")
    assert found == [
        f"config.yaml:5: listen.key_file: the secret key in {tmp_path}/referee.key does not "
        "match referee.key.pub next to it: remote bots would be given the wrong public key"
    ]


def test_two_remote_bots_cannot_share_a_key(tmp_path: Path) -> None:
    write_key(tmp_path)
    found = errors(
        tmp_path,
        WITH_REMOTE
        + f"  - {{name: twin, remote_key: '{REMOTE_KEY}'}}\n"
        + "listen: {port: 7100, key_file: referee.key}\n",
    )
    assert found == [
        "config.yaml:5: bots[2].remote_key: the same key as bots[1] (far): each remote bot "
        "needs a key pair of its own"
    ]


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("", ["config.yaml:4: bots[1].remote_key: a remote bot needs a 'listen' section"]),
        (
            "listen: {port: 7100, key_file: referee.key, advertise: h}\n",
            ["config.yaml:5: listen.advertise: only used with executor kind: dask"],
        ),
        (
            "  - {name: b, command: random, connections: 2}\n"
            "listen: {port: 7100, key_file: referee.key}\n",
            ["config.yaml:5: bots[2].connections: only for a remote bot (remote_key)"],
        ),
        (
            "listen: {port: 7100, key_file: absent.key}\n",
            ["config.yaml:5: listen.key_file: file 'absent.key' does not exist"],
        ),
        (
            "listen: {port: 7100, key_file: config.yaml}\n",
            ["config.yaml:5: listen.key_file: ", "does not hold a CurveZMQ secret key"],
        ),
        (
            "listen: {port: 0, key_file: referee.key}\n",
            ["config.yaml:5: listen.port: should be greater than or equal to 1, got 0"],
        ),
        (
            "listen: {port: 7100, key_file: referee.key, wait: 3}\n",
            [
                "config.yaml:5: listen.wait: unknown key; known keys here: host, port, "
                "key_file, connect_timeout_s, advertise"
            ],
        ),
    ],
)
def test_remote_bot_problems_are_named(tmp_path: Path, extra: str, expected: list[str]) -> None:
    write_key(tmp_path)
    found = errors(tmp_path, WITH_REMOTE + extra)
    assert len(found) == 1, found
    for part in expected:
        assert part in found[0], found


@pytest.mark.parametrize("name", ["demo", "gauntlet", "reference", "cluster", "ladder"])
def test_examples_load(name: str) -> None:
    setup = load_config(EXAMPLES / f"{name}.yaml")
    assert len(setup.bots) >= 2


def test_demo_uses_bundled_bots() -> None:
    setup = load_config(EXAMPLES / "demo.yaml")
    assert {Path(spec.command[0]).parent.name for spec in setup.bots} == {"random", "first"}
