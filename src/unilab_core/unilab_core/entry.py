# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The body of every node's console script: import the node's module, then run its ``main``.

A node's module imports torch, MuJoCo and rclpy, which takes seconds on a busy machine;
a graph stopped in that time (Ctrl-C, the runner's SIGINT, a SIGTERM) used to print a
KeyboardInterrupt traceback from the middle of some import. The console scripts point
at a package's ``entry_points`` module, which imports nothing heavy, and call
``run_node``: a stop while the node's module is imported ends the process quietly, with
exit code 0 and one line on stderr (the node had not started: nothing ran, nothing is
lost), as a stop while the nodes are being made does (``unilab_core.ros.runtime``).
"""

from __future__ import annotations

import importlib
import signal
import sys

from unilab_core import stop


def _stop_on_sigterm(signum, frame) -> None:
    stop.note_stop_signal(signum)
    raise KeyboardInterrupt


def import_or_stop(module: str):
    """
    Return the imported ``module``; a stop signal while it imports ends the process.

    While the module is imported, SIGTERM raises KeyboardInterrupt as Ctrl-C does (the
    previous handler is back when this returns), and either ends the process with exit
    code 0 and one line on stderr. An import that fails otherwise raises as before.
    """
    previous = signal.signal(signal.SIGTERM, _stop_on_sigterm)
    try:
        return importlib.import_module(module)
    except KeyboardInterrupt:
        # No handler of ours runs from here on: a second signal ends the process as is.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print(f'{module.rsplit(".", 1)[-1]}: stopped while starting', file=sys.stderr,
              flush=True)
        sys.exit(0)
    finally:
        if signal.getsignal(signal.SIGTERM) is _stop_on_sigterm:
            signal.signal(signal.SIGTERM, previous)


def run_node(module: str, args=None, func: str = 'main'):
    """Import ``module`` (``import_or_stop``) and return what its ``func(args)`` returns."""
    return getattr(import_or_stop(module), func)(args)
