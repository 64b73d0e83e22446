# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Stop signals (Ctrl-C, SIGTERM): recorded once per process, held in sections that must not split.

ROS-free, so that the cores (a checkpoint write) can hold a stop as the nodes do. The
handlers that call ``note_stop_signal`` and ``raise_stop`` are installed by
``unilab_core.ros.runtime`` (node processes, composed graphs) and the CLI.
"""

import threading

#: The stop signal this process took (SIGINT / SIGTERM through a handler of
#: ``unilab_core.ros.runtime`` or the CLI), if any: one stop per process, further ones are
#: ignored. The spin loops end on it even when its KeyboardInterrupt went astray.
STOP_SIGNALS: list[int] = []


def note_stop_signal(signum: int) -> None:
    """
    Record a stop signal that a handler of the caller's own took (the CLI's Ctrl-C).

    ``spin_nodes`` then ends on it, and takes the EventsExecutor's error from that signal
    landing in its wait as the stop it is.
    """
    if not STOP_SIGNALS:
        STOP_SIGNALS.append(signum)


#: The main thread's depth of ``STOP_DEFERRED`` sections, and whether a stop signal came
#: inside one (raised as KeyboardInterrupt when the outermost section ends).
_DEFER = {'depth': 0, 'pending': False}


def raise_stop() -> None:
    """
    Raise KeyboardInterrupt for a stop signal, or hold it while a section must not split.

    Our stop handlers (and the CLI's Ctrl-C handler) call this: Python runs a signal
    handler in the main thread between any two bytecodes, e.g. right after a publish
    returned and before it was counted; inside ``STOP_DEFERRED`` the interrupt comes at
    the section's end instead.
    """
    if _DEFER['depth']:
        _DEFER['pending'] = True
        return
    raise KeyboardInterrupt


class _StopDeferred:
    """
    ``with STOP_DEFERRED:`` a stop signal in the main thread is raised after the block.

    For steps that must happen together or not at all (an actuator command's publish and
    its count; a checkpoint's write, whose C++ writer turns an interrupt inside it into
    a RuntimeError). Another thread's section defers nothing (a signal's exception is raised
    in the main thread only). Cheap enough for a per-command path: no allocation.
    """

    def __enter__(self):
        if threading.get_ident() == threading.main_thread().ident:
            _DEFER['depth'] += 1

    def __exit__(self, exc_type, exc, tb):
        if threading.get_ident() != threading.main_thread().ident:
            return False
        _DEFER['depth'] -= 1
        if not _DEFER['depth'] and _DEFER['pending']:
            _DEFER['pending'] = False
            # The stop wins over an error raised inside the block (it rides along as
            # the interrupt's cause): a Ctrl-C is never lost to an error handler.
            raise KeyboardInterrupt from exc
        return False


STOP_DEFERRED = _StopDeferred()
