# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The iceoryx2 backend: the ring's reliability tests, on the library's shared memory."""

import ctypes
import glob
import json
import os
import random
import signal
import stat
import subprocess
import time

import numpy as np
import pytest
from unilab_core.transport import iox_service
from unilab_core.transport.channel import TensorReader
from unilab_core.transport.descriptor import Descriptor, DescriptorError
from unilab_core.transport.iox_layout import DESCRIPTOR_PREFIX, service_name, TensorHeader
from unilab_core.transport.iox_reader import IoxTensorReader
from unilab_core.transport.iox_writer import IoxTensorWriter
from unilab_core.transport.ring_layout import RingFullError
from unilab_core.transport.stress import check_pattern, expect_line, fill_pattern, spawn

# The backend's modules import iceoryx2 only when used: skip where it is not installed.
iox2 = pytest.importorskip('iceoryx2')


@pytest.fixture
def domain():
    """Return a private ROS domain number for service names."""
    return 2000 + os.getpid() % 50000


def _reader(w: IoxTensorWriter) -> IoxTensorReader:
    return IoxTensorReader(w.name)


def _helper(*args, stdin=None):
    return spawn(*args, '--backend', 'iceoryx2', stdin=stdin)


def test_roundtrip_views_loan_and_header(domain):
    w = IoxTensorWriter('/t/rt', 1 << 16, 4, domain=domain)
    r = _reader(w)
    d = w.write('obs', 7, {'x': np.arange(6, dtype=np.float32).reshape(2, 3),
                           'k': np.array([1, 2], np.int64)}, version=3, stamp_ns=99)
    assert d.segment == DESCRIPTOR_PREFIX + service_name(domain, '/t/rt')
    assert r.wait(1.0)
    got = r.read()
    g = got.descriptor
    assert (g.kind, g.seq, g.version, g.stamp_ns, g.slot_seq) == ('obs', 7, 3, 99, 0)
    assert got.tensors['x'].tolist() == [[0, 1, 2], [3, 4, 5]]
    assert got.tensors['k'].dtype == np.int64 and not got.tensors['x'].flags.writeable
    assert got.tensors['x'].ctypes.data % 64 == 0  # 64-byte aligned payload
    assert got.release()
    loan = w.loan({'p': ((4,), np.float32)})
    loan.tensors['p'][:] = 5.0  # written in shared memory: no copy on publish
    loan.publish('p', 8)
    assert r.wait(1.0) and r.read().tensors['p'].tolist() == [5.0] * 4
    with pytest.raises(ValueError, match='longer than'):
        w.write('k', 0, {'x' * 50: np.ones(1, np.float32)})
    r.close()
    w.close()


def test_latest_held_view_is_never_overwritten_and_skips_are_counted(domain):
    w = IoxTensorWriter('/t/held', 4096, 2, 'latest', domain=domain)
    r = _reader(w)
    shapes = {'p': ((4096,), np.uint8)}

    def put(i):
        loan = w.loan(shapes)
        fill_pattern(loan.tensors['p'], i)
        loan.publish('p', i)

    put(0)
    held = r.read()
    for i in range(1, 40):  # far more messages than slots while the view is held
        put(i)
    assert check_pattern(held.tensors['p'], 0), 'a held view was overwritten'
    assert held.release()
    newest = r.read()
    assert newest.descriptor.slot_seq == 39 and check_pattern(newest.tensors['p'], 39)
    newest.release()
    assert r.stats.reads == 2 and r.stats.skipped == 38  # read or counted, never lost
    assert w.stats.dropped_all_pinned == 0
    r.close()
    w.close()


def test_reliable_window_never_overwrites_and_times_out_with_report(domain):
    stalls = []
    w = IoxTensorWriter('/t/rel', 64, 2, 'reliable', timeout_s=0.05, domain=domain,
                        on_stall=stalls.append)
    r = _reader(w)
    assert w.wait_for_readers(1, 5.0)
    w.write('k', 0, {'x': np.zeros(8, np.uint64)})
    w.write('k', 1, {'x': np.ones(8, np.uint64)})
    with pytest.raises(RingFullError, match='slow reader'):
        w.write('k', 2, {'x': np.full(8, 2, np.uint64)})
    assert w.stats.timeouts == 1
    m = r.read()
    assert m.descriptor.seq == 0 and (m.tensors['x'] == 0).all()
    m.release()
    w.write('k', 2, {'x': np.full(8, 2, np.uint64)})  # one slot free again
    got = []
    while (m := r.read()) is not None:
        got.append(int(m.tensors['x'][0]))
        m.release()
    assert got == [1, 2] and w.stats.discarded == 0
    r.close()
    w.write('k', 3, {'x': np.full(8, 3, np.uint64)})  # a closed reader is not waited for
    w.close()


def test_latest_randomised_cross_process_no_torn_payload_skips_counted(domain):
    count = 2000
    w = _helper('write', '/t/lat', '--domain', str(domain), '--count', str(count),
                '--policy', 'latest', '--slots', '4', '--capacity', '32768',
                '--max-sleep-us', '150', '--split-pause-us', '200', stdin=subprocess.PIPE)
    expect_line(w, 'ready')
    r = IoxTensorReader(DESCRIPTOR_PREFIX + service_name(domain, '/t/lat'))
    rng = random.Random(1)
    bad, last, first = 0, -1, None
    deadline = time.monotonic() + 60
    while last < count - 1 and time.monotonic() < deadline:
        if not r.wait(0.05):
            continue
        got = r.read()
        if got is None:
            continue
        time.sleep(rng.random() * 300e-6)  # "use" the zero-copy view
        index = got.descriptor.slot_seq
        bad += not check_pattern(got.tensors['p'], index)
        first = index if first is None else first
        assert got.release()
        last = index
    w.stdin.close()
    assert w.wait(30) == 0
    assert bad == 0, 'a torn or wrong payload was delivered'
    assert last == count - 1
    # every message from the first one this reader saw was read or counted as skipped
    assert r.stats.reads + r.stats.skipped == last + 1
    assert r.stats.skipped > 0
    r.close()


def test_reliable_randomised_cross_process_nothing_lost(domain):
    count = 2000
    w = _helper('write', '/t/relx', '--domain', str(domain), '--count', str(count),
                '--policy', 'reliable', '--slots', '4', '--capacity', '32768',
                '--max-sleep-us', '100', '--wait-readers', '1', '--timeout-s', '20')
    expect_line(w, 'ready')
    r = IoxTensorReader(DESCRIPTOR_PREFIX + service_name(domain, '/t/relx'))
    rng = random.Random(2)
    got, bad = [], 0
    deadline = time.monotonic() + 60
    while len(got) < count and time.monotonic() < deadline:
        m = r.read() if r.wait(0.05) else None
        if m is None:
            continue
        # a slow stretch at the start makes the writer wait for the window
        time.sleep(2e-3 if len(got) < 20 else rng.random() * 150e-6)
        bad += not check_pattern(m.tensors['p'], m.descriptor.slot_seq)
        got.append(m.descriptor.slot_seq)
        assert m.release()
    stats = json.loads(expect_line(w, '{'))
    assert w.wait(30) == 0
    r.close()
    assert bad == 0
    assert got == list(range(count)), 'reliable lost or reordered messages'
    assert stats['stalls'] > 0 and stats['timeouts'] == 0 and stats['discarded'] == 0


@pytest.mark.parametrize('policy', ['latest', 'reliable'])
def test_reader_killed_mid_read_does_not_block_writer(domain, policy):
    topic = f'/t/kill_{policy}'
    w = IoxTensorWriter(topic, 4096, 2, policy, timeout_s=10.0, domain=domain)
    holder = _helper('hold', topic, '--domain', str(domain))
    expect_line(holder, 'subscribed')
    if policy == 'reliable':
        assert w.wait_for_readers(1, 10.0)
    shapes = {'p': ((4096,), np.uint8)}
    w.loan(shapes).publish('p', 0)
    expect_line(holder, 'held')
    holder.send_signal(signal.SIGKILL)
    holder.wait(10)
    for i in range(1, 50):  # would wait for the dead reader forever (reliable)
        loan = w.loan(shapes)
        assert loan is not None
        loan.publish('p', i)
    assert w.stats.timeouts == 0 and w.stats.dropped_all_pinned == 0
    if policy == 'reliable':
        assert w.stats.readers_reaped == 1 and w.reader_count() == 0
    w.close()


def test_killed_writer_is_cleaned_up_by_the_next_one(domain):
    p = _helper('own', '/t/own', '--domain', str(domain))
    expect_line(p, 'ready')
    p.send_signal(signal.SIGKILL)
    p.wait(10)
    assert iox_service.dead_node_ids(), 'the killed writer\'s node should be dead'
    w = IoxTensorWriter('/t/own', 64, 2, domain=domain)
    assert w.reclaimed  # the dead node's ports and segments are gone
    assert not iox_service.dead_node_ids()
    r = _reader(w)
    w.write('k', 1, {'x': np.ones(2, np.float32)})
    assert r.wait(1.0) and r.read().tensors['x'].tolist() == [1.0, 1.0]
    r.close()
    w.close()


def test_segments_are_owner_only(domain):
    before = set(glob.glob('/dev/shm/iox2_*'))
    w = IoxTensorWriter('/t/perm', 1024, 2, domain=domain)
    r = _reader(w)
    w.write('k', 0, {'x': np.ones(4, np.float32)})
    new = set(glob.glob('/dev/shm/iox2_*')) - before
    assert any(n.endswith('.data') for n in new)  # the payload segment of the service
    for path in new:
        if path.endswith('global_mgmt'):
            continue  # the library's 16-byte node counter, shared by every user
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600, path
    r.close()
    w.close()


def test_bad_header_is_a_counted_layout_error_and_the_reader_goes_on(domain):
    w = IoxTensorWriter('/t/bad', 1024, 2, domain=domain)
    tr = TensorReader()
    d = Descriptor(kind='k', seq=0, segment=w.name, slot=0, slot_seq=0, payload_bytes=0,
                   tensors=[])
    reader = tr.attach(d)
    # A foreign publisher on the same service: a sample whose header is not ours.
    raw = w.service.publisher_builder().initial_max_slice_len(16).create()
    s = raw.loan_slice_uninit(16)
    ctypes.memset(s.user_header_ptr, 0, ctypes.sizeof(TensorHeader))
    s.assume_init().send()
    with pytest.raises(DescriptorError) as exc:
        tr.read_woken(w.name)
    assert exc.value.kind == 'bad_layout' and tr.errors['bad_layout'] == 1
    raw.delete()
    w.write('k', 5, {'x': np.ones(3, np.float32)})
    got = tr.read_woken(w.name)
    assert got.descriptor.seq == 5 and reader.stats.reads == 1
    got.release()
    tr.close()
    w.close()


def test_latched_late_reader_gets_the_newest_message_at_once(domain):
    w = IoxTensorWriter('/t/weights', 256, 4, 'reliable', domain=domain, latched=True)
    for v in (1, 2, 3):
        w.write('weights', 0, {'flat': np.full(4, v, np.float32)}, version=v)
    r = _reader(w)  # joins after the writes: the writer hands it the history on connect
    deadline = time.monotonic() + 5.0
    got = None
    while got is None and time.monotonic() < deadline:
        r.wait(0.1)
        got = r.read()
    assert got is not None, 'a latched writer did not hand its last message to a late reader'
    assert got.descriptor.version == 3 and got.tensors['flat'].tolist() == [3.0] * 4
    got.release()
    assert r.read() is None  # only the newest, not the older versions
    r.close()
    w.close()
