# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""A node process's spin loop: a stop signal inside the executor's wait is a stop."""

import signal

import pytest
from unilab_core import stop
from unilab_core.ros import runtime


class _Executor:
    """An executor whose wait fails as rclpy's EventsExecutor does when a signal lands in it."""

    def __init__(self):
        self.spins = 0
        self.nodes = []
        self.signal = None  # a stop signal whose handler runs inside the wait
        self.fails = True   # the wait then fails (else a callback swallowed the interrupt)

    def add_node(self, node):
        self.nodes.append(node)

    def spin_once(self, timeout_sec=None):
        self.spins += 1
        if self.signal is not None:
            stop.note_stop_signal(self.signal)  # what a handler records before raising
        if self.fails:
            raise RuntimeError("Unable to convert call argument '0' to Python object")
        assert self.spins < 100, 'the loop ran on after the stop'


class _Node:
    closed = False

    def close(self):
        self.closed = True


@pytest.fixture
def fake_graph(monkeypatch):
    executor = _Executor()
    monkeypatch.setattr(runtime, 'make_executor', lambda kind='events': executor)
    monkeypatch.setattr(runtime, 'detach_and_shutdown', lambda ex, nodes: None)
    monkeypatch.setattr(runtime.rclpy, 'ok', lambda: True)  # the context stays up
    monkeypatch.setattr(stop, 'STOP_SIGNALS', [])
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    yield executor
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def test_the_executors_error_after_a_stop_signal_ends_the_loop_and_closes_the_nodes(
        fake_graph):
    fake_graph.signal = signal.SIGINT
    node = _Node()
    runtime.spin_nodes([node])
    assert fake_graph.spins == 1 and node.closed


def test_the_same_error_without_a_stop_is_raised(fake_graph):
    node = _Node()
    with pytest.raises(RuntimeError, match='Unable to convert'):
        runtime.spin_nodes([node])
    assert node.closed  # the close path runs either way


def test_a_stop_signal_another_handler_took_counts_as_well(fake_graph):
    # The CLI's own Ctrl-C handler (exit 130) records the signal through note_stop_signal.
    fake_graph.signal = signal.SIGINT
    node = _Node()
    runtime.spin_nodes([node])
    assert fake_graph.spins == 1 and node.closed
    stop.note_stop_signal(signal.SIGTERM)  # one stop per process: the first is kept
    assert stop.STOP_SIGNALS == [signal.SIGINT]


def test_a_stop_whose_interrupt_something_swallowed_still_ends_the_loop(fake_graph):
    # The handler recorded the stop, but its KeyboardInterrupt never reached the loop (a
    # callback's code took it): the loop ends on the record, at its next turn.
    fake_graph.signal, fake_graph.fails = signal.SIGINT, False
    node = _Node()
    runtime.spin_nodes([node])
    assert fake_graph.spins == 1 and node.closed


def test_a_stop_before_the_loop_spins_nothing(fake_graph):
    stop.note_stop_signal(signal.SIGTERM)  # e.g. while the nodes were being made
    node = _Node()
    runtime.spin_nodes([node])
    assert fake_graph.spins == 0 and node.closed


@pytest.fixture
def stop_handler(monkeypatch):
    """Our stop handler on SIGINT and SIGTERM for the test, the previous ones put back."""
    monkeypatch.setattr(stop, 'STOP_SIGNALS', [])
    monkeypatch.setattr(stop, '_DEFER', {'depth': 0, 'pending': False})
    previous = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    runtime._install_sigterm(sigint=True)
    yield
    for sig, handler in previous.items():
        signal.signal(sig, handler)


def test_a_stop_signal_inside_a_deferred_section_is_raised_at_its_end(stop_handler):
    done = []
    with pytest.raises(KeyboardInterrupt):
        with stop.STOP_DEFERRED:
            done.append('publish')
            signal.raise_signal(signal.SIGINT)   # the handler runs here, in this thread
            done.append('count')                 # ... and must not split the two
            with stop.STOP_DEFERRED:          # nested: raised at the outermost end
                done.append('nested')
            done.append('after nested')
    assert done == ['publish', 'count', 'nested', 'after nested']
    assert stop.STOP_SIGNALS == [signal.SIGINT]
    assert stop._DEFER == {'depth': 0, 'pending': False}


def test_outside_a_section_a_stop_signal_interrupts_at_once(stop_handler):
    done = []
    with pytest.raises(KeyboardInterrupt):
        done.append('before')
        signal.raise_signal(signal.SIGTERM)
        done.append('after')
    assert done == ['before']


def test_a_section_on_another_thread_defers_nothing(stop_handler):
    import threading
    inside, release = threading.Event(), threading.Event()

    def other():
        with stop.STOP_DEFERRED:
            inside.set()
            release.wait(5)
    t = threading.Thread(target=other)
    t.start()
    try:
        assert inside.wait(5)
        assert stop._DEFER['depth'] == 0
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)
            pytest.fail('the stop was held by another thread\'s section')
    finally:
        release.set()
        t.join(5)


def test_a_held_stop_wins_over_an_error_inside_the_section_which_rides_along(stop_handler):
    with pytest.raises(KeyboardInterrupt) as interrupt:
        with stop.STOP_DEFERRED:
            signal.raise_signal(signal.SIGINT)
            raise ValueError('the publish failed')
    assert isinstance(interrupt.value.__cause__, ValueError)
    assert stop._DEFER == {'depth': 0, 'pending': False}


HANGING_TEARDOWN = '''
import time
import rclpy.node
from unilab_core.ros import runtime
runtime.TEARDOWN_LIMIT_S = 1.0


class Hangs(rclpy.node.Node):
    done = True  # the spin loop ends at once

    def __init__(self):
        super().__init__('hangs_at_teardown')

    def destroy_node(self):
        print('closed, destroying', flush=True)
        time.sleep(60)  # a participant that never goes away


runtime.spin_node(Hangs)
print('not reached', flush=True)
'''


def test_a_node_process_whose_teardown_hangs_exits_with_the_stacks(tmp_path):
    import subprocess
    import sys
    # The teardown sleeps 60 s: ending before the 30 s time-out means the limit ended it.
    out = subprocess.run([sys.executable, '-c', HANGING_TEARDOWN], capture_output=True,
                         text=True, timeout=30)
    assert out.returncode == 1, out
    assert 'closed, destroying' in out.stdout and 'not reached' not in out.stdout
    assert 'Timeout' in out.stderr and 'destroy_node' in out.stderr, out.stderr


STUCK = '''
import time
from unilab_core.ros import runtime

runtime.dump_stacks_on_signal()


def stuck_where_it_waits():
    print('waiting', flush=True)
    time.sleep(60)
    print('woke', flush=True)


stuck_where_it_waits()
'''


def test_sigusr1_prints_every_threads_stack_and_the_process_runs_on(tmp_path):
    import subprocess
    import sys
    proc = subprocess.Popen([sys.executable, '-c', STUCK], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == 'waiting\n'
        proc.send_signal(runtime.STACK_DUMP_SIGNAL)
        lines = [proc.stderr.readline() for _ in range(3)]
        assert any('stuck_where_it_waits' in line for line in lines), lines
        assert proc.poll() is None  # still running: the dump is not a stop
    finally:
        proc.kill()
        proc.wait(10)


CRASHING = '''
import ctypes
from unilab_core.ros import runtime

runtime.dump_stacks_on_signal()


def crashes_in_c_code():
    ctypes.string_at(0)  # reads address 0: SIGSEGV


crashes_in_c_code()
'''


def test_a_crash_in_c_code_prints_where_and_the_process_still_dies_of_its_signal():
    # A node process that segfaults: its log says in which Python function; its starter
    # still sees the signal (-11), not a clean exit.
    import subprocess
    import sys
    out = subprocess.run([sys.executable, '-c', CRASHING], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == -11, out
    assert 'Segmentation fault' in out.stderr and 'crashes_in_c_code' in out.stderr


def test_no_stderr_descriptor_means_no_stack_dump_and_no_error(monkeypatch):
    # The CLI run in-process under a test's captured stderr (no file descriptor).
    import io
    import sys
    monkeypatch.setattr(sys, '__stderr__', io.StringIO())
    assert runtime.dump_stacks_on_signal() is False


def test_a_teardown_without_a_stderr_descriptor_runs_unbounded_and_completes(monkeypatch):
    # spin_composed's finally under a test's captured output: no watchdog to arm, no error.
    import io
    import sys
    monkeypatch.setattr(sys, '__stderr__', io.StringIO())
    monkeypatch.setattr(sys, 'stderr', io.StringIO())
    shut = []
    monkeypatch.setattr(runtime.rclpy, 'try_shutdown', lambda: shut.append(True))

    class Destroyed:
        destroyed = False

        def destroy_node(self):
            self.destroyed = True
    nodes = [Destroyed(), Destroyed()]
    runtime.destroy_bounded(nodes)
    assert all(n.destroyed for n in nodes) and shut == [True]


SLOW_START = '''
import time
from unilab_core.ros import runtime


class SlowStart:
    def __init__(self):
        print('making', flush=True)
        time.sleep(60)  # a node whose construction takes long (an adapter's first test)


runtime.spin_node(SlowStart)
'''


def test_a_stop_while_the_node_is_being_made_ends_the_process_quietly():
    import signal
    import subprocess
    import sys
    proc = subprocess.Popen([sys.executable, '-c', SLOW_START], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == 'making\n'
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert 'Traceback' not in err and 'KeyboardInterrupt' not in err, err
