# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Start nodes: one per process (console scripts) or several composed in one executor."""

from __future__ import annotations

import ctypes
import faulthandler
import importlib
import os
import signal
import sys
import threading
import time
from typing import Callable, Iterable

import rclpy
from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
from rclpy.signals import SignalHandlerOptions

from unilab_core import stop
from unilab_core.config import ConfigError


def make_executor(kind: str = 'events'):
    """Return an executor: ``events`` (rclpy.experimental.EventsExecutor) or single-threaded."""
    if kind == 'events':
        from rclpy.experimental import EventsExecutor
        return EventsExecutor()
    return SingleThreadedExecutor()


def detach_and_shutdown(executor, nodes: Iterable, timeout_sec: float | None = 1.0) -> None:
    """
    Take ``nodes`` off ``executor`` (clearing their executor reference), then shut it down.

    A node keeps a weak reference to its executor and calls into it when it is
    destroyed; with the (C++) EventsExecutor, ``remove_node`` alone leaves that
    reference in place, so a later ``destroy_node`` reached into a shut-down
    executor. Setting ``node.executor = None`` removes the node and the reference.
    """
    for n in nodes:
        try:
            n.executor = None
        except Exception:  # noqa: BLE001 - a node already destroyed: nothing to detach
            pass
    executor.shutdown(timeout_sec=timeout_sec)


#: Seconds a process may take to destroy its nodes and DDS participant once they closed.
TEARDOWN_LIMIT_S = 10.0

#: ``kill -USR1 PID``: the process prints every thread's Python stack to stderr, runs on.
STACK_DUMP_SIGNAL = signal.SIGUSR1


def dump_stacks_on_signal() -> bool:
    """
    Print every thread's stack to stderr on ``STACK_DUMP_SIGNAL``; the process runs on.

    For a process that does not stop or answer: ``kill -USR1 PID`` (or the whole group)
    says where each thread is, without a debugger. faulthandler writes from the signal
    handler itself, so a main thread stuck in C code holding the GIL still shows. A
    fatal signal (SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL: a crash in C code) prints the
    stacks too before the process dies of it, so a node's log says where it crashed. It
    writes to the process's own stderr (file descriptor 2, whatever replaced
    ``sys.stderr``); returns False where there is none (nothing registered).
    """
    try:
        faulthandler.register(STACK_DUMP_SIGNAL, file=sys.__stderr__, all_threads=True,
                              chain=False)
        faulthandler.enable(file=sys.__stderr__, all_threads=True)
    except (AttributeError, OSError, ValueError):  # no stderr with a file descriptor
        return False
    return True


def destroy_bounded(nodes: Iterable) -> None:
    """
    Destroy ``nodes`` (closed already) and shut rclpy down, within ``TEARDOWN_LIMIT_S``.

    Fast DDS can deadlock while destroying the participant as other processes' writers
    go away (seen once, a launch SIGKILLed: the main thread spinning in
    DomainParticipant::set_listener, a discovery thread blocked in on_writer_discovery),
    which left an orphan at 100 % of a core. The nodes' work is saved by then (stats,
    checkpoints): a teardown that outlasts the limit dumps every thread's stack to stderr
    and exits 1 (faulthandler's own thread: it needs no GIL). Without a stderr descriptor
    to write to (the CLI run in-process under captured output) the teardown is unbounded.
    """
    try:
        faulthandler.dump_traceback_later(TEARDOWN_LIMIT_S, exit=True, file=sys.__stderr__)
        bounded = True
    except (AttributeError, OSError, ValueError):  # no stderr with a file descriptor
        bounded = False
    try:
        for n in nodes:
            n.destroy_node()
        rclpy.try_shutdown()
    finally:
        if bounded:
            faulthandler.cancel_dump_traceback_later()


def _install_sigterm(sigint: bool = False):
    # launch and our CLI stop children with SIGINT then SIGTERM; turn SIGTERM
    # into the same clean path as Ctrl-C so nodes flush stats and checkpoints. Once
    # that path runs, a further SIGTERM (a launcher and the kernel's parent-death
    # signal may both send one) must not break off the checkpoint it is writing.
    # ``sigint``: SIGINT takes the same path (a node process started without rclpy's
    # own handler, which would shut the context down before the nodes close).
    def handler(signum, frame):
        if stop.STOP_SIGNALS:
            return
        stop.note_stop_signal(signum)
        stop.raise_stop()
    signal.signal(signal.SIGTERM, handler)
    if sigint:
        signal.signal(signal.SIGINT, handler)


def keep_context_on_stop() -> dict:
    """
    Make SIGINT and SIGTERM raise KeyboardInterrupt here, with the ROS context kept up.

    For a process that runs nodes in its main thread and starts rclpy with
    ``SignalHandlerOptions.NO`` (``rclpy_signal_options``): rclpy's own handler
    shuts the context down before the nodes close, and a closing node could
    publish nothing more (the safety gate's zero command on a velocity or effort
    interface). Returns the handlers to put back (``restore_handlers``); off the
    main thread nothing changes and it returns {}.
    """
    if threading.current_thread() is not threading.main_thread():
        return {}
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    # The CLI's SIGINT handler (it records the interrupt for exit 130) raises through
    # ``raise_stop`` and leaves the context alone; Python's own is replaced by ours, which
    # does the same (it also holds the interrupt inside ``STOP_DEFERRED``).
    own = previous[signal.SIGINT]
    _install_sigterm(sigint=not callable(own) or own is signal.default_int_handler)
    return previous


def rclpy_signal_options(held: dict):
    """Return rclpy's signal-handler option: none of its own where ``held`` says ours are in."""
    return SignalHandlerOptions.NO if held else SignalHandlerOptions.ALL


def restore_handlers(held: dict) -> None:
    """Put back the signal handlers that ``keep_context_on_stop`` replaced."""
    for sig, previous in held.items():
        signal.signal(sig, previous)


def _hold_further_stops() -> dict:
    """
    Let the close path finish: a further SIGINT or SIGTERM is ignored from here on.

    Ctrl-C in a terminal reaches every process of the group, and launch (or our runner)
    then sends its own SIGINT: without this the second one breaks a node off inside its
    close path (the trainer inside its final checkpoint). A stuck close still ends with
    the starter's SIGKILL. Returns the handlers to put back once the nodes are closed.
    """
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {s: signal.signal(s, signal.SIG_IGN) for s in (signal.SIGINT, signal.SIGTERM)}


#: Set by a parent that starts nodes as child processes (``unilab_bringup.runner``): its pid.
PARENT_PID_ENV = 'UNILAB_PARENT_PID'
_PR_SET_PDEATHSIG = 1


def stop_with_parent() -> bool:
    """
    Ask the kernel for SIGTERM when the parent in ``UNILAB_PARENT_PID`` dies; False if gone.

    A parent killed with SIGKILL cannot stop its node processes itself: without this
    they would run on (a bridge stepping, a gate commanding) with nobody to stop them.
    SIGTERM takes the node's clean path (stats and checkpoints flushed). The variable is
    taken out of the environment so this process's own children do not inherit it.
    """
    want = os.environ.pop(PARENT_PID_ENV, '')
    if not want.isdigit():
        return True
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the parent stops us as before
        return True
    # The parent may have died before the request: then we were re-parented already.
    return os.getppid() == int(want)


def sched_idle() -> str:
    """
    Move every thread of this process, and those it starts later, to SCHED_IDLE; say how.

    For the processes beside a robot's control loop (the adapter, the recorder): they
    run only on a core no other process wants, their DDS threads (started by rclpy
    before the node could ask) included, so that receiving the robot's topics never
    takes a core from the control loop as it handles the same messages. Threads that
    cannot be moved (gone meanwhile) are skipped.
    """
    try:
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    except (AttributeError, OSError) as exc:
        return f'nice only (SCHED_IDLE refused: {exc})'
    moved = 1
    try:
        tids = [int(t) for t in os.listdir('/proc/self/task')]
    except OSError:
        tids = []
    for tid in tids:
        if tid == threading.get_native_id():
            continue
        try:
            os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))
            moved += 1
        except OSError:
            pass
    return f'SCHED_IDLE ({moved} threads)'


def spin_nodes(nodes: list, executor_kind: str = 'events',
               until: Callable[[], bool] | None = None,
               on_tick: Callable[[], None] | None = None, tick_s: float = 0.5,
               on_stop: Callable[[object], None] | None = None) -> None:
    """
    Spin ``nodes`` on one executor until ``until()`` is true or Ctrl-C.

    A stop signal ends the loop by its KeyboardInterrupt and, should some code between
    the handler and this loop take that exception, by its record (``stop.STOP_SIGNALS``)
    at the loop's next turn: a Ctrl-C is never lost. ``on_stop(executor)`` runs
    once the loop ended with the context still up and no stop signal (``until``
    said stop), before the nodes close: a node can take what is still queued (the
    recorder writes every message already received).

    A node with a ``rehearsal`` (``unilab_core.rehearsal.Rehearsal``: the deploy
    chain's joint-state reader) gets every node's ``rehearse`` method as a step, in
    the nodes' order; the loop sleeps no longer than until a rehearsal is due and runs
    it here, between callbacks.
    """
    executor = make_executor(executor_kind)
    for n in nodes:
        executor.add_node(n)
    rehearsal = chain_rehearsal(nodes)
    last = time.monotonic()
    try:
        while rclpy.ok() and not stop.STOP_SIGNALS:
            timeout = 0.1
            if rehearsal is not None:
                wait = rehearsal.wait_s(time.monotonic())
                if wait == 0.0:
                    rehearsal.run(time.monotonic())
                    wait = rehearsal.wait_s(time.monotonic())
                if wait is not None:
                    timeout = min(timeout, wait)
            try:
                executor.spin_once(timeout_sec=timeout)
            except RuntimeError:
                # EventsExecutor raises a pybind11 conversion error when Ctrl-C shuts the
                # context down inside spin_once, or when our handler's KeyboardInterrupt
                # is raised inside its C++ wait (a node process: the context stays up);
                # either is a stop.
                if rclpy.ok() and not stop.STOP_SIGNALS:
                    raise
                return
            now = time.monotonic()
            if now - last >= tick_s:
                last = now
                if on_tick is not None:
                    on_tick()
                if until is not None and until():
                    break
        if stop.STOP_SIGNALS and rclpy.ok():
            # The loop ended on the record: the handler's interrupt never came here.
            print(f'warning: stop signal {signal.Signals(stop.STOP_SIGNALS[0]).name}: its '
                  'KeyboardInterrupt was taken by the code it interrupted, not this loop; '
                  'stopping on its record', file=sys.stderr, flush=True)
        elif on_stop is not None and rclpy.ok():
            on_stop(executor)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        held = _hold_further_stops()
        try:
            for n in nodes:
                closer = getattr(n, 'close', None)
                if closer is not None:
                    closer()
            detach_and_shutdown(executor, nodes)
        finally:
            for sig, previous in held.items():
                signal.signal(sig, previous if previous is not None else signal.SIG_DFL)


def chain_rehearsal(nodes: list):
    """
    Return the rehearsal of ``nodes`` (the first node's ``rehearsal``), its steps added.

    Every node's ``rehearse`` method is a step, in the order of ``nodes`` (the chain's:
    perception, policy, gate). None when no node has a rehearsal (training, a node
    process without the chain's input).
    """
    rehearsal = next((r for n in nodes if (r := getattr(n, 'rehearsal', None)) is not None),
                     None)
    if rehearsal is not None and not rehearsal.steps:
        for n in nodes:
            step = getattr(n, 'rehearse', None)
            if callable(step):
                rehearsal.add(step)
    return rehearsal


def spin_node(node_cls, args=None) -> None:
    """Entry point body for a node's console script (one node per process)."""
    spin_process(lambda: [node_cls()], args)


def spin_process(make_nodes: Callable[[], list], args=None) -> None:
    """
    Entry point body of a process running ``make_nodes()`` on one executor.

    One node (a console script) or several composed (``unilab_bringup.node_group``).
    The process stops with its parent (``stop_with_parent``), takes SIGTERM as
    Ctrl-C, prints its threads' stacks on SIGUSR1 (``dump_stacks_on_signal``), exits 2
    on a ConfigError (the message, no traceback), 0 on a stop while the nodes are being
    made (no traceback), and runs until one node is ``done``;
    the exit status is the worst of the nodes' ``exit_code``.
    """
    # Ctrl-C and SIGTERM raise KeyboardInterrupt with the context still up; rclpy's own
    # handler would shut the context down first, and a closing node could publish
    # nothing more: the safety gate's last word on a velocity or effort interface is a
    # zero command (a forward command controller keeps the last one it got).
    _install_sigterm(sigint=True)
    dump_stacks_on_signal()
    if not stop_with_parent():
        print('error: the process that started this node is gone', file=sys.stderr)
        sys.exit(1)
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    try:
        nodes = make_nodes()
    except ConfigError as exc:
        print(f'error: {exc}', file=sys.stderr)
        rclpy.try_shutdown()  # destroys the nodes made before the bad one
        sys.exit(2)
    except KeyboardInterrupt:
        # Stopped while a node was still being made (e.g. an adapter's first simulation
        # test): nothing ran yet, so the stop ends the process as a stop does, quietly.
        _hold_further_stops()
        rclpy.try_shutdown()
        sys.exit(0)
    executor_kind = 'events'
    try:
        spin_nodes(nodes, executor_kind,
                   until=lambda: any(getattr(n, 'done', False) for n in nodes))
    finally:
        _hold_further_stops()  # this process ends here: no stop may break off the rest
        destroy_bounded(nodes)
    # A node that stopped on an unrecoverable error says so in its exit status.
    sys.exit(max(getattr(n, 'exit_code', 0) for n in nodes))


def create_composed(specs: Iterable, args_of: Callable[[str], list[str]] | None = None,
                    **kwargs) -> list:
    """
    Create every node of ``specs`` in this process (after ``rclpy.init(args=...)``).

    ``args_of(name)`` gives a node's own ROS arguments (namespace, remappings:
    ``Graph.ros_args``); ``kwargs`` go to every node (e.g. ``context``).
    """
    nodes = []
    for spec in specs:
        cls = getattr(importlib.import_module(spec.module), spec.node_class)
        extra = args_of(spec.name) if args_of is not None else []
        nodes.append(cls(cli_args=['--ros-args', *extra], **kwargs) if extra
                     else cls(**kwargs))
    share_sim_clock(nodes)
    return nodes


def share_sim_clock(nodes: list) -> int:
    """
    Drive the clocks of ``nodes`` on simulated time without a ``/clock`` message each.

    rclpy gives every node with ``use_sim_time`` its own time source and ``/clock``
    subscription: in one process each simulated step's clock message would be taken
    once per node, an executor wake each. When one of ``nodes`` is the simulator publishing
    the clock (``drives_sim_clock`` true, and ``drive_clocks(clocks)``: it sets their
    time as it publishes a step), every node's
    subscription goes and the simulator sets each clock directly, sending ``/clock`` over
    DDS only while something outside the process reads it. Otherwise the first such
    node's time source keeps its subscription and sets the others' clocks too (rclpy's
    ``TimeSource.attach_clock``, as a time source shared between nodes does). Returns how
    many subscriptions went.
    """
    sim = [n for n in nodes if n.get_clock().ros_time_is_active]
    source = next((n for n in nodes if getattr(n, 'drives_sim_clock', False)), None)
    kept = sim[:1] if source is None else []
    for node in sim:
        if node in kept:
            continue
        # rclpy keeps a node's time source private; detach_node is its public way to drop
        # the subscription (a later use_sim_time change on that node re-subscribes nothing).
        node._time_source.detach_node()
        if kept:
            kept[0]._time_source.attach_clock(node.get_clock())
    if source is not None and sim:
        source.drive_clocks([n.get_clock() for n in sim])
    return max(0, len(sim) - len(kept))
