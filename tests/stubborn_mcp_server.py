"""A stdio "MCP server" that never starts and will not be stopped politely: it
ignores SIGTERM and the end of its standard input, never answers ``initialize``, and starts a
child of its own (in its process group) that ignores SIGTERM too. Both carry the marker given
as the first argument on their command line, so a test finds them in ``/proc``. With
``exit-on-eof`` it exits when its input ends, leaving its child behind (as a wrapper whose
server outlives it).

``python tests/stubborn_mcp_server.py MARKER [exit-on-eof]``
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time

CHILD = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)"


def main() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    subprocess.Popen([sys.executable, "-c", CHILD, sys.argv[1]], stdin=subprocess.DEVNULL)
    print("stubborn server: starting, slowly", file=sys.stderr, flush=True)
    if sys.argv[2:] == ["exit-on-eof"]:
        sys.stdin.buffer.read()  # never answers; returns when the input ends
        return
    time.sleep(600)  # stdin is never read: its end changes nothing


if __name__ == "__main__":
    main()
