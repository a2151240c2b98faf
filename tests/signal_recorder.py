"""A recorder for the signal tests: imports the SDK once, then forks one recording per request.

Importing anthropic takes about two seconds on a loaded machine; forking a process that has already
imported it gives each run a fresh process in milliseconds. Protocol, one line each way:

* stdin ``<cassette path> <calls> <slow>`` forks a recorder (``slow`` 1: as if each write were
  slow next to the calls, so entries wait in memory for a coalesced write). It prints
  ``pid <pid>``, then after each call returns ``call <i> <entries still waiting in memory>``, then
  ``done`` once the cassette is closed, and waits there to be signalled.
* When the recorder has ended this process prints ``exit <code>`` (minus the signal that ended it).

The loopback server's URL comes from the ``LLM_URL`` environment variable.
"""

from __future__ import annotations

import faulthandler
import os
import signal
import sys
import time
import traceback

import anthropic

import llmvcr
from llmvcr._active import current_session


def say(line: str) -> None:
    sys.stdout.write(line + "\n")  # one write: a Ctrl-C never cuts a line in two
    sys.stdout.flush()


def record(path: str, calls: int, slow: bool) -> None:
    say(f"pid {os.getpid()}")
    client = anthropic.Anthropic(
        api_key="sk-ant-signal-test-0000", base_url=os.environ["LLM_URL"], max_retries=0
    )
    with llmvcr.recording(path):
        session = current_session()
        assert session is not None
        for i in range(calls):
            if slow:
                session.file.queue.next_flush = time.monotonic() + 60  # the next entries wait in memory
            client.messages.create(
                model="claude-test", max_tokens=8, messages=[{"role": "user", "content": f"n{i}"}]
            )
            say(f"call {i} {len(session.file.queue.pending)}")
    say("done")
    while True:  # the parent always ends this process with a signal
        signal.pause()


def child(path: str, calls: int, slow: bool) -> None:
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # a hung recorder shows where it waits
    try:
        record(path, calls, slow)
    except KeyboardInterrupt:  # die of SIGINT, as an interpreter would after an uncaught Ctrl-C
        sys.stdout.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        traceback.print_exc()
    sys.stdout.flush()
    os._exit(70)


def main() -> None:
    print("ready", flush=True)
    for line in sys.stdin:
        path, calls, slow = line.split()
        pid = os.fork()
        if pid == 0:
            child(path, int(calls), slow == "1")
        _, status = os.waitpid(pid, 0)
        say(f"exit {os.waitstatus_to_exitcode(status)}")


if __name__ == "__main__":
    main()
