# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The RT process and its shared-memory slots, without ROS (behaviour, no wall-clock bounds)."""

import os
import signal
import time

import numpy as np
import pytest
from spec_helpers import spec

from unilab_safety import shm_slots as sh
from unilab_safety.loop import ActionIn
from unilab_safety.rt_process import RtProcess
from unilab_safety.thread_backend import InlineBackend, ThreadBackend

BACKENDS = {'process': RtProcess, 'thread': ThreadBackend, 'inline': InlineBackend}

LIMITS = {'joint_limits': {
    'a': {'has_position_limits': True, 'min_position': -1.0, 'max_position': 1.0,
          'has_velocity_limits': True, 'max_velocity': 1.0},
    'b': {'has_position_limits': True, 'min_position': 0.0, 'max_position': 2.0}}}


def _spec(tmp_path, **kw):
    import yaml
    path = tmp_path / 'limits.yaml'
    path.write_text(yaml.safe_dump(LIMITS))
    values = {'joint_limits_file': str(path), 'joint_names': ['a', 'b'], 'dt': 0.1,
              'num_envs': 2, 'watchdog_timeout_s': 5.0, 'lockstep': True, 'rt_priority': 0,
              'mlockall': False}
    values.update(kw)
    return spec(**values)


def _action(seq, a, reset=None, shape_ok=True):
    return ActionIn(seq, 1, seq * 10, np.asarray(a, dtype=np.float32), reset, shape_ok, 7)


def _next(backend, timeout_s=10.0):
    t_end = time.monotonic() + timeout_s
    while time.monotonic() < t_end:
        e = backend.pop()
        if e is not None:
            return e
        backend.wait_output(0.05)
    raise AssertionError('no output')


def test_action_slot_round_trip_and_torn_reads_return_nothing():
    block = sh.SharedBlock.create(2, 2, capacity=4, stats_size=8)
    try:
        w, r = sh.ActionWriter(block), sh.ActionReader(block)
        assert r.take() is None
        w.put(_action(3, [[0.5, 1.0], [0.0, 0.5]], reset=np.array([True, False])))
        item = r.take()
        assert (item.seq, item.version, item.stamp_ns, item.recv_ns) == (3, 1, 30, 7)
        np.testing.assert_array_equal(item.action, [[0.5, 1.0], [0.0, 0.5]])
        assert item.reset.tolist() == [True, False] and item.shape_ok
        assert r.take() is None  # each put is taken once
        w.put(_action(4, [[0, 0], [0, 0]]))
        w.put(_action(5, [[0, 0], [0, 0]]))
        assert r.take().seq == 5 and r.superseded == 1
        # A writer caught mid-copy (odd generation) is never read, and never waited for.
        block.ctrl[sh.C_IN] += 1
        assert r.take() is None
        block.ctrl[sh.C_IN] += 1
        assert r.take().seq == 5  # complete again (same content, new generation)
        w.put(_action(6, [[0, 0], [0, 0]], shape_ok=False))
        assert r.take().shape_ok is False
    finally:
        block.close()


def test_shared_output_ring_commits_in_order_and_detects_laps():
    block = sh.SharedBlock.create(1, 2, capacity=4, stats_size=8)
    try:
        ring, reader = sh.SharedOutputRing(block), sh.ShmOutputReader(block)
        ring.push('command', 1, 0, 10, np.array([[1.0, 2.0]]), t_ns=5)
        assert reader.pop() is None and ring.pending  # not visible before commit
        ring.commit()
        e = reader.pop()
        assert (e.kind, e.seq, e.stamp_ns, e.t_ns) == ('command', 1, 10, 5)
        np.testing.assert_array_equal(e.command, [[1.0, 2.0]])
        for k in range(6):  # 6 entries into 4 slots: the 2 oldest are lost, and counted
            ring.push('fallback', k, 0, 0, np.full((1, 2), k))
        ring.commit()
        kinds = [reader.pop() for _ in range(4)]
        assert [x.seq for x in kinds] == [2, 3, 4, 5] and reader.overruns == 2
        assert reader.pop() is None
    finally:
        block.close()


@pytest.mark.parametrize('mode', BACKENDS)
def test_every_action_is_gated_and_answered_once(tmp_path, mode):
    backend = BACKENDS[mode](_spec(tmp_path))
    backend.start()
    try:
        # The measured positions first: the reference of the first command.
        backend.put_state(np.array([[0.5, 1.0], [0.0, 0.5]]))
        backend.put(_action(0, [[0.5, 1.0], [0.0, 0.5]]))
        e = _next(backend)
        assert (e.kind, e.seq) == ('command', 0)
        np.testing.assert_array_equal(e.command, [[0.5, 1.0], [0.0, 0.5]])
        backend.put(_action(1, [[5.0, np.nan], [-0.5, 3.0]]))  # far out; NaN row
        e = _next(backend)
        # Row 0 had NaN: held; row 1 moved at most max_velocity * dt = 0.1 on 'a' and
        # was clamped to b's range.
        np.testing.assert_allclose(e.command, [[0.5, 1.0], [-0.1, 2.0]])
        c = backend.counters()
        assert (c['passed'], c['clamped'], c['rejected'], c['batches'], c['commands']) == (
            2, 1, 1, 2, 2)
        assert backend.alive and backend.error is None
        if mode == 'inline':
            # Gated by the caller: the answer is there when put returns, no loop wake-up.
            backend.put(_action(2, [[0.5, 1.0], [0.0, 0.5]]))
            e = backend.pop()
            assert e is not None and (e.kind, e.seq) == ('command', 2)
            assert backend.answers_inline and backend.early_cycles == 0
        else:
            assert not backend.answers_inline
            assert backend.early_cycles >= 1  # lock-step: an action wakes the loop at once
    finally:
        backend.stop()
        backend.close()
    assert not backend.alive and backend.error is None


def test_rt_process_reset_handshake_and_estop(tmp_path):
    backend = RtProcess(_spec(tmp_path, watchdog_timeout_s=0.02, watchdog_fallback='estop'))
    granted = backend.start()
    assert {'mlockall', 'sched_fifo', 'cpu_affinity', 'process'} <= set(granted)
    try:
        backend.put_state(np.array([[0.5, 1.0], [0.0, 0.5]]))
        backend.put(_action(0, [[0.5, 1.0], [0.0, 0.5]]))
        assert _next(backend).kind == 'command'
        assert _next(backend).kind == 'estop'  # silence past the watchdog: e-stop latched
        assert backend.estopped
        rid = backend.request_reset()
        t_end = time.monotonic() + 10.0
        while not backend.reset_done(rid) and time.monotonic() < t_end:
            time.sleep(0.002)
        assert backend.reset_done(rid) and not backend.estopped
        assert backend.period_summary()['period_error_max_us'] >= 0.0
    finally:
        backend.stop()
        backend.close()


def test_rt_process_death_is_reported(tmp_path):
    backend = RtProcess(_spec(tmp_path))
    backend.start()
    try:
        os.kill(backend.pid, signal.SIGKILL)
        backend.wait_output(10.0)  # the pidfd wakes the waiter
        backend.proc.wait(10.0)
        assert not backend.alive and 'code -9' in backend.error
    finally:
        backend.stop()
        backend.close()


def test_rt_process_start_failure_is_an_error(tmp_path):
    backend = RtProcess(_spec(tmp_path, joint_limits_file=str(tmp_path / 'missing.yaml')))
    with pytest.raises(RuntimeError, match='missing.yaml'):
        backend.start()
    backend.close()


@pytest.mark.parametrize('mode', BACKENDS)
def test_no_command_before_a_measured_position(tmp_path, mode):
    backend = BACKENDS[mode](_spec(
        tmp_path, watchdog_timeout_s=0.05))
    backend.start()
    try:
        backend.put(_action(0, [[0.9, 2.0], [0.9, 2.0]]))
        with pytest.raises(AssertionError, match='no output'):
            _next(backend, 0.5)  # no joint position: nothing to limit against, no command
        assert backend.counters()['unreferenced_actions'] == 1
        measured = np.array([[0.0, 1.0], [0.0, 1.0]])
        backend.put_state(measured)
        backend.put(_action(1, [[0.9, 2.0], [0.9, 2.0]]))
        e = _next(backend)
        # The process loop may see the measured position before the fresh action: the last
        # action is then past the watchdog, and the loop holds where the joints are.
        while e.kind == 'fallback':
            np.testing.assert_allclose(e.command, measured)
            e = _next(backend)
        assert e.kind == 'command'
        # now one step from where the joints are
        np.testing.assert_allclose(e.command, [[0.1, 2.0], [0.1, 2.0]])
    finally:
        backend.stop()
        backend.close()


def test_inline_watchdog_holds_on_its_own_thread_after_the_last_action(tmp_path):
    """Inline: the caller gates; silence past the watchdog is still answered by the loop."""
    backend = InlineBackend(_spec(tmp_path, watchdog_timeout_s=0.05, lockstep=False))
    backend.start()
    try:
        backend.put_state(np.array([[0.5, 1.0], [0.0, 0.5]]))
        backend.put(_action(0, [[0.6, 1.0], [0.0, 0.5]]))
        e = backend.pop()
        assert e.kind == 'command'
        np.testing.assert_allclose(e.command, [[0.6, 1.0], [0.0, 0.5]])
        e = _next(backend)  # nothing more put: the loop thread's watchdog holds
        assert e.kind == 'fallback'
        np.testing.assert_allclose(e.command, [[0.6, 1.0], [0.0, 0.5]])
        assert backend.counters()['fallbacks'] >= 1 and backend.cycles > 0
    finally:
        backend.stop()
        backend.close()
