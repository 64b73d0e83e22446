# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Futex wake-up path of the ring: woken across processes, dead sleepers, waiter, slot layouts."""

import os
import select
import signal
import subprocess
import sys
import threading

import numpy as np
import pytest
from unilab_core.transport import futex, shm
from unilab_core.transport.channel import TensorReader, TensorWriter
from unilab_core.transport.descriptor import DescriptorError
from unilab_core.transport.ring_layout import R_STATE, R_WAITING, S_META_KEY
from unilab_core.transport.ring_reader import RingReader
from unilab_core.transport.ring_writer import RingWriter
from unilab_core.transport.stress import check_pattern, fill_pattern
from unilab_core.transport.waiter import RingWaiter

pytestmark = pytest.mark.skipif(not futex.available(), reason='futex needs Linux x86-64/AArch64')


@pytest.fixture
def domain():
    """Yield a private domain number for segment names; remove its leftovers afterwards."""
    d = 2000 + os.getpid() % 50000
    yield d
    for name in shm.list_segments(d):
        os.unlink(shm.segment_path(name))


def _sleeper(name, policy):
    # One wait long enough to span the test's write: with short timeouts (0.5 s) a timeout
    # could end the wait between the test seeing the waiting flag and its write, and the
    # sleeper then took the message on its next turn without a FUTEX_WAKE (failed once
    # under the suite's load: wakes 0). A wake that does not come costs 10 s and fails
    # the wakes assertion.
    return subprocess.Popen([sys.executable, '-m', 'unilab_core.transport.stress', 'sleep', name,
                             '--timeout-s', '10'],
                            stdout=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))


def _line(proc, timeout_s=30.0):
    if not select.select([proc.stdout], [], [], timeout_s)[0]:
        proc.kill()
        pytest.fail(f'helper said nothing within {timeout_s} s')
    return proc.stdout.readline().split()


def _until_asleep(w, timeout_s=30.0):
    """Wait until a registered reader has set its waiting flag (it is in FUTEX_WAIT)."""
    ev = threading.Event()
    for _ in range(int(timeout_s / 0.005)):
        r = w.m.readers
        if ((r[:, R_STATE] == 1) & (r[:, R_WAITING] == 1)).any():
            return
        ev.wait(0.005)
    pytest.fail('the reader never went to sleep on the futex')


@pytest.mark.parametrize('policy', ['latest', 'reliable'])
def test_reader_blocked_in_futex_wait_is_woken_by_writer_in_other_process(domain, policy):
    name = shm.segment_name(domain, 'n', f'wake_{policy}')
    with RingWriter(name, 4096, 4, policy, timeout_s=10.0) as w:
        sleeper = _sleeper(name, policy)
        try:
            assert _line(sleeper) == ['waiting']
            _until_asleep(w)
            w.write(nbytes=4096, fill=lambda v: fill_pattern(v, 0))
            # the sleeper's wait returned because of the message, and it read message 0
            # intact
            assert _line(sleeper) == ['woke', '0', 'True']
            assert w.wakes >= 1  # the writer saw the waiting flag and issued FUTEX_WAKE
        finally:
            sleeper.kill()
            sleeper.wait(10)


def test_thread_in_wait_is_woken_and_gil_released(domain):
    # The waiting thread blocks in the kernel with the GIL released: this thread keeps
    # running (it writes) while the other one sleeps.
    name = shm.segment_name(domain, 'n', 'thread')
    with RingWriter(name, 4096, 4, 'latest') as w, RingReader(name) as r:
        out = []
        th = threading.Thread(target=lambda: out.append(r.wait(30.0)))
        th.start()
        _until_asleep(w)
        w.write(nbytes=4096, fill=lambda v: fill_pattern(v, 5))
        th.join(30.0)
        assert out == [True] and w.wakes == 1
        assert r.wait(0.0) is True  # news stays news until read
        with r.read_latest() as msg:
            assert msg.index == 0
        assert r.wait(0.01) is False  # nothing new: times out, says so


def test_spinning_wait_sees_news_without_a_futex_wake(domain):
    # A message written while the reader polls is taken without sleeping: the writer
    # finds no waiting flag and issues no FUTEX_WAKE; after the poll window the reader
    # sleeps on the futex as usual and times out when nothing comes.
    name = shm.segment_name(domain, 'n', 'spin')
    with RingWriter(name, 4096, 4, 'latest') as w, RingReader(name) as r:
        out = []
        spinning = threading.Event()

        def reader():
            spinning.set()
            out.append(r.wait(30.0, spin_s=30.0))

        th = threading.Thread(target=reader)
        th.start()
        spinning.wait(10.0)
        threading.Event().wait(0.05)  # the reader is polling by now (it never sleeps here)
        w.write(nbytes=4096, fill=lambda v: fill_pattern(v, 3))
        th.join(30.0)
        assert out == [True] and w.wakes == 0
        assert not w.m.readers[:, R_WAITING].any()
        with r.read_latest() as msg:
            assert msg.index == 0
        assert r.wait(0.05, spin_s=0.01) is False


@pytest.mark.parametrize('spin_s', [0.0, 0.001])
def test_waiter_thread_calls_back_on_news_and_stops(domain, spin_s):
    # The ROS-free waiter sleeps on the futex (polling first when spin_s > 0), calls the
    # plain callable when the writer commits, and ends when stopped, even from its own
    # thread (the callback stops it here, as a subscription does when a writer restarts).
    name = shm.segment_name(domain, 'n', 'waiter')
    with RingWriter(name, 4096, 4, 'latest') as w, RingReader(name) as r:
        waiter = RingWaiter(r, spin_s=spin_s, name=f'test_waiter_{spin_s}')
        got, done = [], threading.Event()

        def on_news():
            with r.read_latest() as msg:
                got.append((msg.index, check_pattern(msg.data, msg.index)))
            waiter.stop()
            waiter.join(30.0)  # its own thread: returns at once
            done.set()

        waiter.start(on_news)
        _until_asleep(w)
        w.write(nbytes=4096, fill=lambda v: fill_pattern(v, 0))
        assert done.wait(30.0)
        waiter.join(30.0)
        assert got == [(0, True)] and waiter.stopping() and w.wakes == 1
        assert waiter.name not in [t.name for t in threading.enumerate()]


@pytest.mark.parametrize('policy', ['latest', 'reliable'])
def test_reader_killed_while_asleep_does_not_block_writer(domain, policy):
    name = shm.segment_name(domain, 'n', f'sleepkill_{policy}')
    with RingWriter(name, 4096, 2, policy, timeout_s=10.0) as w:
        sleeper = _sleeper(name, policy)
        assert _line(sleeper) == ['waiting']
        _until_asleep(w)
        sleeper.send_signal(signal.SIGKILL)
        sleeper.wait(10)
        # its waiting flag and (reliable) its cursor are left behind in the table
        for i in range(50):
            assert w.write(nbytes=4096, fill=lambda v, i=i: fill_pattern(v, i)) is not None
        assert w.stats.timeouts == 0 and w.stats.dropped_all_pinned == 0
        if policy == 'reliable':  # its cursor would have stalled the writer: reaped
            assert w.stats.readers_reaped == 1 and w.reader_count() == 0
        w.reap_dead_readers()
        assert w.reader_count() == 0 and not w.m.readers[:, R_WAITING].any()


def test_woken_read_uses_slot_layout_and_drops_bad_layout(domain):
    w = TensorWriter('n', 'layout', 4096, n_slots=4, domain=domain)
    reader = TensorReader()
    try:
        d = w.write('obs', 3, {'a': np.arange(6, dtype=np.float32).reshape(2, 3),
                               'b': np.array([7], np.int64)}, version=9, stamp_ns=11)
        reader.receive(d).release()  # discovery by descriptor maps the segment
        assert reader.already_taken(d)
        w.write('obs', 4, {'a': np.ones((2, 3), np.float32), 'b': np.array([8], np.int64)},
                version=9, stamp_ns=12)
        got = reader.read_woken(w.name)
        assert (got.descriptor.kind, got.descriptor.seq, got.descriptor.version,
                got.descriptor.stamp_ns) == ('obs', 4, 9, 12)
        assert got.tensors['a'].shape == (2, 3) and int(got.tensors['b'][0]) == 8
        assert not got.tensors['a'].flags.writeable
        got.release()
        assert reader.read_woken(w.name) is None  # nothing new
        # a slot whose layout bytes are garbage: clear error, counted, dropped
        d = w.write('obs', 5, {'a': np.ones((2, 3), np.float32), 'b': np.array([9], np.int64)})
        w.ring.m.slot_meta[d.slot, :8] = np.frombuffer(b'\xff{not js', np.uint8)
        w.ring.m.slot_hdr[d.slot, S_META_KEY] = 12345  # not in the reader's cache
        with pytest.raises(DescriptorError) as err:
            reader.read_woken(w.name)
        assert err.value.kind == 'bad_layout' and 'layout' in str(err.value)
        assert reader.errors['bad_layout'] == 1
        # the reader keeps serving the next good message
        w.write('obs', 6, {'a': np.zeros((2, 3), np.float32), 'b': np.array([1], np.int64)})
        got = reader.read_woken(w.name)
        assert got.descriptor.seq == 6
        got.release()
    finally:
        reader.close()
        w.close()


def test_layout_too_large_for_slot_header_is_a_clear_error(domain):
    w = TensorWriter('n', 'big', 1 << 16, n_slots=2, domain=domain)
    try:
        many = {f'tensor_with_a_rather_long_name_{i:03d}': np.zeros(1, np.float32)
                for i in range(120)}
        with pytest.raises(ValueError, match='does not fit the slot header'):
            w.write('k', 0, many)
        # the ring is usable afterwards (the aborted slot is never delivered)
        assert w.write('k', 1, {'x': np.ones(2, np.float32)}) is not None
    finally:
        w.close()
