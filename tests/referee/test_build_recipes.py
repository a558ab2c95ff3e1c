"""The build recipes of docs/writing-a-bot.md for compiled languages, run as a league runs a
build: in a real bubblewrap sandbox, without network, the toolchain shown read-only through
``build.read_only`` and set up through ``build.env``. Each needs its toolchain on this
machine and is skipped where it is missing (none is installed for the tests)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path
from typing import BinaryIO

import pytest

from referee.build import BuildLimits, BuildResult, run_build
from referee.sandbox import bubblewrap_problem, plan_sandbox

pytestmark = pytest.mark.skipif(
    bubblewrap_problem() is not None and not os.environ.get("CI"),
    reason=f"bubblewrap cannot sandbox here: {bubblewrap_problem()}",
)

#: A dependency of every recipe's bot, given inside the upload (vendored): builds are offline.
_ANSWER = 42


def _build(
    tmp_path: Path, files: dict[str, str], command: str, **options: object
) -> tuple[BuildResult, Path]:
    """Build a submission of ``files``; return the result and the built folder."""
    source = tmp_path / "sub" / "source"
    for name, text in files.items():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        (source / name).write_text(text)
    built = tmp_path / "built"

    def receive(stream: BinaryIO) -> None:
        with tarfile.open(fileobj=stream, mode="r|") as archive:
            archive.extractall(built, filter="data")

    result = run_build(
        command,
        source=source,
        target=tmp_path / "sub" / "bot",
        receive=receive,
        sandbox=plan_sandbox("required"),
        limits=BuildLimits(timeout_s=240),
        **options,  # type: ignore[arg-type]
    )
    return result, built


def _cargo() -> tuple[Path, list[str], dict[str, str]] | None:
    """cargo, what a build must be shown for it, and its environment; None if absent."""
    found = shutil.which("cargo") or str(Path.home() / ".cargo" / "bin" / "cargo")
    cargo = Path(found)
    if not cargo.exists():
        return None
    shown = [str(cargo.parent)]
    env = {"PATH": f"{cargo.parent}:/usr/bin:/bin", "CARGO_HOME": "/tmp/cargo-home"}
    if cargo.resolve().name == "rustup":  # rustup's proxy: it needs its toolchains
        rustup_home = Path(os.environ.get("RUSTUP_HOME", Path.home() / ".rustup"))
        shown.append(str(rustup_home))
        env["RUSTUP_HOME"] = str(rustup_home)
    return cargo, shown, env


def test_the_cargo_recipe_builds_offline_with_vendored_crates(tmp_path: Path) -> None:
    toolchain = _cargo()
    if toolchain is None:
        pytest.skip("no cargo here")
    _, shown, env = toolchain
    files = {
        "Cargo.toml": '[package]\nname = "bot"\nversion = "0.1.0"\nedition = "2021"\n\n'
        '[dependencies]\ntiny = "1.0"\n',
        "src/main.rs": 'fn main() { println!("{}", tiny::answer()); }\n',
        # What `cargo vendor` writes, and the config it asks for.
        ".cargo/config.toml": '[source.crates-io]\nreplace-with = "vendored-sources"\n\n'
        '[source.vendored-sources]\ndirectory = "vendor"\n',
        "vendor/tiny/Cargo.toml": '[package]\nname = "tiny"\nversion = "1.0.0"\nedition = "2021"\n',
        "vendor/tiny/src/lib.rs": f"pub fn answer() -> u32 {{ {_ANSWER} }}\n",
        "vendor/tiny/.cargo-checksum.json": '{"files":{},"package":null}\n',
    }
    command = (
        "cargo build --offline --release --target-dir /tmp/target && cp /tmp/target/release/bot ."
    )
    result, built = _build(tmp_path, files, command, read_only=shown, env=env)
    assert result.succeeded, result.log_tail
    assert not (built / "target").exists()  # the build's work stayed in its /tmp
    ran = subprocess.run([built / "bot"], capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == str(_ANSWER)


#: Plugin versions the Maven recipe pins, so that an offline build needs only them.
_MAVEN_PLUGINS = {"maven-compiler-plugin": "3.13.0", "maven-jar-plugin": "3.4.1"}


def test_the_maven_recipe_builds_offline_from_a_local_repository(tmp_path: Path) -> None:
    repository = Path(os.environ.get("AEGIS_MAVEN_REPOSITORY", Path.home() / ".m2" / "repository"))
    plugins = repository / "org" / "apache" / "maven" / "plugins"
    if shutil.which("mvn") is None or shutil.which("java") is None:
        pytest.skip("no Maven or Java here")
    missing = [
        f"{name} {v}" for name, v in _MAVEN_PLUGINS.items() if not (plugins / name / v).is_dir()
    ]
    if missing:
        pytest.skip(f"the local Maven repository {repository} lacks {', '.join(missing)}")
    pinned = "".join(
        f"<plugin><artifactId>{name}</artifactId><version>{version}</version></plugin>"
        for name, version in _MAVEN_PLUGINS.items()
    )
    files = {
        "pom.xml": '<project xmlns="http://maven.apache.org/POM/4.0.0">'
        "<modelVersion>4.0.0</modelVersion><groupId>example</groupId>"
        "<artifactId>bot</artifactId><version>1.0</version><packaging>jar</packaging>"
        "<properties><maven.compiler.release>17</maven.compiler.release>"
        "<project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties>"
        f"<build><plugins>{pinned}</plugins></build></project>\n",
        "src/main/java/bot/Main.java": "package bot;\npublic class Main { public static void "
        f"main(String[] args) {{ System.out.println({_ANSWER}); }} }}\n",
    }
    command = (
        'mvn --offline --quiet -Dmaven.repo.local="$MAVEN_REPOSITORY" compiler:compile jar:jar '
        "&& cp target/bot-1.0.jar bot.jar && rm -rf target"
    )
    env = {"MAVEN_REPOSITORY": str(repository)}
    result, built = _build(tmp_path, files, command, read_only=[str(repository)], env=env)
    assert result.succeeded, result.log_tail
    assert not (built / "target").exists()
    ran = subprocess.run(
        ["java", "-cp", built / "bot.jar", "bot.Main"], capture_output=True, text=True, check=True
    )
    assert ran.stdout.strip() == str(_ANSWER)


def test_the_go_recipe_builds_offline_with_vendored_modules(tmp_path: Path) -> None:
    go = shutil.which("go")
    if go is None:
        pytest.skip("no Go here")
    # The author's side: a module with a dependency, vendored (`go mod vendor`, here from a
    # local copy of the dependency, as the network is not needed for it).
    author = tmp_path / "author"
    (author / "tiny").mkdir(parents=True)
    (author / "tiny" / "go.mod").write_text("module example.com/tiny\n\ngo 1.18\n")
    (author / "tiny" / "tiny.go").write_text(
        f"package tiny\n\nfunc Answer() int {{ return {_ANSWER} }}\n"
    )
    (author / "go.mod").write_text(
        "module example.com/bot\n\ngo 1.18\n\nrequire example.com/tiny v1.0.0\n\n"
        "replace example.com/tiny => ./tiny\n"
    )
    (author / "main.go").write_text(
        'package main\n\nimport (\n\t"fmt"\n\n\t"example.com/tiny"\n)\n\n'
        "func main() { fmt.Println(tiny.Answer()) }\n"
    )
    scratch = {"GOPATH": str(tmp_path / "gopath"), "GOCACHE": str(tmp_path / "gocache")}
    subprocess.run(
        [go, "mod", "vendor"],
        cwd=author,
        env={**os.environ, **scratch, "GOFLAGS": "-mod=mod", "GOPROXY": "off"},
        check=True,
    )
    files = {
        str(path.relative_to(author)): path.read_text()
        for path in author.rglob("*")
        if path.is_file()
    }
    go_root = subprocess.run([go, "env", "GOROOT"], capture_output=True, text=True, check=True)
    shown = [str(Path(go).resolve().parent), go_root.stdout.strip()]
    env = {
        "PATH": f"{Path(go).resolve().parent}:/usr/bin:/bin",
        "GOFLAGS": "-mod=vendor",
        "GOPROXY": "off",
        "GOCACHE": "/tmp/go-cache",
        "GOPATH": "/tmp/go",
    }
    result, built = _build(tmp_path, files, "go build -o bot .", read_only=shown, env=env)
    assert result.succeeded, result.log_tail
    ran = subprocess.run([built / "bot"], capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == str(_ANSWER)
