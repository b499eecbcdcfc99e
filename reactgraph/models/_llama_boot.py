"""Child-process entry point for the embedded model server (not imported by reactgraph).

Run by :class:`reactgraph.models.local.LocalModelServer` as::

    python _llama_boot.py PARENT_PID [llama_cpp.server arguments...]

It prepares the interpreter, then runs ``python -m llama_cpp.server`` with the remaining
arguments:

1. A daemon thread exits the server as soon as its parent process is gone, whatever
   killed the parent (SIGKILL included, where no ``atexit`` hook runs), so no orphan server
   keeps its port and memory; it also removes the parent's temporary log directory, named
   by ``REACTGRAPH_LLAMA_SCRATCH_DIR``.
2. Environment variables named like the server's settings (``MODEL``, ``PORT``, ``HOST``,
   ``API_KEY``, ``N_CTX``, ``CONFIG_FILE``...) are removed: pydantic-settings reads them
   for every option not given on the command line, and the server's ``__main__`` lets
   ``HOST`` and ``PORT`` override the command line.
3. Two defects of llama-cpp-python 0.3.x's ``chatml-function-calling`` handler are fixed:

   * its Jinja template is rendered with HTML autoescaping, so every ``"``, ``'``, ``&``,
     ``<`` and ``>`` in messages and tool-call arguments reached the model as ``&#34;``,
     ``&#39;``, ``&amp;``...; autoescaping is turned off for templates built from strings;
   * with ``tool_choice="auto"`` (and for the message after a forced call) it generates
     with ``max_tokens=None``, so a runaway tool argument ran to the end of the context
     window; generations inside the handler now default to the request's ``max_tokens``
     (or 512 tokens when the request has none).

4. A grammar that llama.cpp cannot parse (its JSON-schema converter writes ``\\d`` from a
   ``pattern`` such as ``^[A-Z]{2,5}-\\d{3}$`` into a literal, which its own parser rejects)
   made the sampler NULL and the server die with SIGSEGV on the next token. Such a grammar
   is now replaced by the generic JSON grammar (and a line in the log).

This file only uses the standard library until it imports ``llama_cpp``; it must not
import ``reactgraph`` (whose package import pulls in the whole engine).
"""

from __future__ import annotations

import contextvars
import os
import runpy
import shutil
import sys
import threading
import time
from typing import Any

_HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0] or ".") == _HERE:
    del sys.path[0]  # don't let env.py / local.py next to this file shadow other modules

DEFAULT_MAX_TOKENS = 512
SCRATCH_DIR_ENV = "REACTGRAPH_LLAMA_SCRATCH_DIR"  # removed when the parent dies
_max_tokens: contextvars.ContextVar[int | None] = contextvars.ContextVar("reactgraph_max_tokens", default=None)


def _watch_parent(parent: int, scratch_dir: str | None) -> None:
    while True:
        if os.getppid() != parent:
            if scratch_dir:  # the parent's temporary log directory, which it can't remove now
                shutil.rmtree(scratch_dir, ignore_errors=True)
            os._exit(0)
        time.sleep(0.5)


def _scrub_environment() -> None:
    from llama_cpp.server.settings import Settings

    fields = {name.lower() for name in Settings.model_fields} | {"config_file"}
    for key in list(os.environ):
        if key.lower() in fields:
            del os.environ[key]


def _patch_chat_handler() -> None:
    import jinja2
    from llama_cpp import llama_chat_format
    from llama_cpp.llama import Llama

    select_autoescape = jinja2.select_autoescape

    def no_string_autoescape(*args: Any, **kwargs: Any) -> Any:
        kwargs["default_for_string"] = False
        return select_autoescape(*args, **kwargs)

    jinja2.select_autoescape = no_string_autoescape  # type: ignore[assignment]

    create_completion = Llama.create_completion

    def capped_create_completion(self: Any, *args: Any, **kwargs: Any) -> Any:
        cap = _max_tokens.get()
        if cap is not None and not args and kwargs.get("max_tokens") is None:
            kwargs["max_tokens"] = cap
        return create_completion(self, *args, **kwargs)

    Llama.create_completion = capped_create_completion  # type: ignore[method-assign]

    original = llama_chat_format.get_chat_completion_handler("chatml-function-calling")

    def chatml_function_calling(*args: Any, **kwargs: Any) -> Any:
        requested = kwargs.get("max_tokens")
        cap = requested if isinstance(requested, int) and requested > 0 else DEFAULT_MAX_TOKENS
        token = _max_tokens.set(cap)
        try:
            return original(*args, **kwargs)
        finally:
            _max_tokens.reset(token)

    llama_chat_format.LlamaChatCompletionHandlerRegistry().register_chat_completion_handler(
        "chatml-function-calling", chatml_function_calling, overwrite=True
    )


def _patch_grammar_sampler() -> None:
    from llama_cpp import _internals
    from llama_cpp import llama_cpp as lib
    from llama_cpp.llama_grammar import JSON_GBNF

    def add_grammar(self: Any, model: Any, grammar: Any) -> None:
        sampler = lib.llama_sampler_init_grammar(
            model.vocab, grammar._grammar.encode("utf-8"), grammar._root.encode("utf-8")
        )
        if not sampler:  # NULL: llama.cpp could not parse the grammar (it logged why)
            print("reactgraph: unparsable grammar replaced by the generic JSON grammar", file=sys.stderr)
            sampler = lib.llama_sampler_init_grammar(model.vocab, JSON_GBNF.encode("utf-8"), b"root")
            if not sampler:
                raise ValueError("the request's grammar could not be parsed")
        lib.llama_sampler_chain_add(self.sampler, sampler)

    _internals.LlamaSampler.add_grammar = add_grammar  # type: ignore[method-assign]


def main() -> None:
    parent = int(sys.argv[1])
    scratch_dir = os.environ.pop(SCRATCH_DIR_ENV, None)
    threading.Thread(target=_watch_parent, args=(parent, scratch_dir), name="parent-watch", daemon=True).start()
    _scrub_environment()
    _patch_chat_handler()
    _patch_grammar_sampler()
    sys.argv = ["llama_cpp.server", *sys.argv[2:]]
    runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)


if __name__ == "__main__":
    main()
