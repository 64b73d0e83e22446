# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Shared-memory ring: seqlock, policies, dead readers/writers, segment lifetime."""

import json
import os
import random
import signal
import stat
import subprocess
import time

import numpy as np
import pytest
from unilab_core.transport import shm
from unilab_core.transport.channel import TensorWriter
from unilab_core.transport.ring_layout import (reclaim_stale, SegmentBusyError, StaleSlotError,
                                               TransportError)
from unilab_core.transport.ring_reader import RingReader
from unilab_core.transport.ring_writer import RingWriter
from unilab_core.transport.stress import check_pattern, expect_line, fill_pattern, spawn


@pytest.fixture
def domain():
    """Yield a private domain number for segment names; remove its leftovers afterwards."""
    d = 1000 + os.getpid() % 50000
    yield d
    for name in shm.list_segments(d):
        os.unlink(shm.segment_path(name))


def test_segment_mode_and_scoped_name(domain):
    name = shm.segment_name(domain, '/my node', '/unilab/observation')
    assert name == f'unilab_d{domain}_my_node_unilab_observation'
    assert shm.segment_name(domain + 1, 'n', 't') != shm.segment_name(domain, 'n', 't')
    with RingWriter(name, 128, 2) as w:
        assert stat.S_IMODE(os.stat(shm.segment_path(name)).st_mode) == 0o600
        assert w.n_slots == 2
    assert not os.path.exists(shm.segment_path(name))
    with pytest.raises(ValueError):
        shm.segment_path('../../etc/passwd')


def test_seqlock_rejects_slot_being_written_or_overwritten(domain):
    name = shm.segment_name(domain, 'n', 'seq')
    with RingWriter(name, 64, 2, 'latest') as w, RingReader(name) as r:
        w.write(parts=[np.full(8, 1, np.uint64)])
        m = r.read_latest()
        assert (m.data.view(np.uint64) == 1).all() and not m.data.flags.writeable
        # a loan in progress: the slot's generation is odd, no reader may take it
        slot, index, view = w.begin(64)
        with pytest.raises(StaleSlotError):
            r._view(slot, index)
        view[:] = 2
        w.commit()
        # an unpinned view of message 1 is invalid once the slot is rewritten
        unpinned = r._view(slot, index)
        assert unpinned.still_valid()
        m.release()
        for _ in range(2):
            w.write(parts=[np.full(8, 3, np.uint64)])
        assert not unpinned.still_valid()


def test_latest_writer_skips_pinned_slot_never_tears_view(domain):
    name = shm.segment_name(domain, 'n', 'pin')
    with RingWriter(name, 64, 3, 'latest') as w, RingReader(name) as r:
        w.write(parts=[np.full(8, 7, np.uint64)])
        m = r.read_latest()
        for i in range(20):  # the writer never waits and never writes the pinned slot
            assert w.write(parts=[np.full(8, 100 + i, np.uint64)]) is not None
        assert (m.data.view(np.uint64) == 7).all() and m.still_valid()
        assert w.stats.pinned_skips > 0
        assert m.release()
        m2 = r.read_latest()
        assert (m2.data.view(np.uint64) == 119).all()
        assert r.stats.skipped == 19  # messages 1..19 except the newest were never read
        m2.release()


def test_latest_drops_when_every_slot_is_pinned(domain):
    name = shm.segment_name(domain, 'n', 'allpinned')
    with RingWriter(name, 64, 2, 'latest') as w:
        readers = [RingReader(name) for _ in range(2)]
        w.write(parts=[np.zeros(8, np.uint64)])
        held = [readers[0].read_latest()]
        w.write(parts=[np.ones(8, np.uint64)])
        held.append(readers[1].read_latest())
        assert {h.slot for h in held} == {0, 1}
        assert w.write(parts=[np.ones(8, np.uint64)]) is None
        assert w.stats.dropped_all_pinned == 1
        for h in held:
            h.release()
        assert w.write(parts=[np.ones(8, np.uint64)]) is not None
        for r in readers:
            r.close()


def test_reliable_never_overwrites_and_times_out_with_report(domain):
    name = shm.segment_name(domain, 'n', 'rel')
    stalls = []
    with RingWriter(name, 64, 2, 'reliable', timeout_s=0.05, on_stall=stalls.append) as w, \
            RingReader(name) as r:
        w.write(parts=[np.zeros(8, np.uint64)])
        w.write(parts=[np.ones(8, np.uint64)])
        with pytest.raises(Exception) as exc:
            w.write(parts=[np.full(8, 2, np.uint64)])
        assert 'slow reader' in str(exc.value) and w.stats.timeouts == 1
        m = r.read_next()
        assert m.index == 0 and (m.data.view(np.uint64) == 0).all()
        m.release()
        w.write(parts=[np.full(8, 2, np.uint64)])
        got = []
        while (m := r.read_next()) is not None:
            got.append(int(m.data.view(np.uint64)[0]))
            m.release()
        assert got == [1, 2]


def _drain_latest(name, count, seed):
    """Read a latest ring at random speeds until message count-1; verify every payload."""
    rng = random.Random(seed)
    pinned = RingReader(name)
    copier = RingReader(name, register=False)
    bad = 0
    last = -1
    deadline = time.monotonic() + 60
    while last < count - 1 and time.monotonic() < deadline:
        if rng.random() < 0.5:
            m = pinned.read_latest()
            if m is None:
                continue
            time.sleep(rng.random() * 300e-6)  # "use" the zero-copy view
            bad += not check_pattern(m.data, m.index)
            assert m.release()  # a pinned view stays intact while it is held
            last = max(last, m.index)
        else:
            got = copier.read_copy()
            if got is None:
                continue
            data, index = got
            bad += not check_pattern(data, index)
            last = max(last, index)
    return pinned, copier, bad, last


def test_latest_randomised_cross_process_no_torn_payload_skips_counted(domain):
    name = shm.segment_name(domain, 'w', 'latest')
    count = 3000
    w = spawn('write', name, '--count', str(count), '--policy', 'latest', '--slots', '4',
              '--capacity', '32768', '--max-sleep-us', '150', '--split-pause-us', '200',
              stdin=subprocess.PIPE)
    expect_line(w, 'ready')
    pinned, copier, bad, last = _drain_latest(name, count, seed=1)
    w.stdin.close()
    assert w.wait(30) == 0
    assert bad == 0, 'a torn or wrong payload was delivered'
    assert last == count - 1
    # every message was either delivered to the pinned reader or counted as skipped by it
    assert pinned.stats.reads + pinned.stats.skipped == pinned._last_index + 1
    assert copier.stats.reads + copier.stats.skipped == copier._last_index + 1
    assert pinned.stats.skipped > 0 and copier.stats.skipped > 0
    pinned.close()
    copier.close()


def test_reliable_randomised_cross_process_nothing_lost(domain):
    name = shm.segment_name(domain, 'w', 'reliable')
    count = 3000
    w = spawn('write', name, '--count', str(count), '--policy', 'reliable', '--slots', '4',
              '--capacity', '32768', '--max-sleep-us', '100', '--wait-readers', '1',
              '--timeout-s', '20')
    expect_line(w, 'ready')
    r = RingReader(name)
    rng = random.Random(2)
    got, bad = [], 0
    deadline = time.monotonic() + 60
    while len(got) < count and time.monotonic() < deadline:
        m = r.read_next()
        if m is None:
            continue
        # a slow stretch at the start forces the writer to wait for free slots
        time.sleep(2e-3 if len(got) < 20 else rng.random() * 150e-6)
        bad += not check_pattern(m.data, m.index)
        got.append(m.index)
        assert m.release()
    stats = json.loads(expect_line(w, '{'))
    assert w.wait(30) == 0
    r.close()
    assert bad == 0
    assert got == list(range(count)), 'reliable lost or reordered messages'
    assert stats['stalls'] > 0 and stats['timeouts'] == 0


@pytest.mark.parametrize('policy', ['latest', 'reliable'])
def test_reader_killed_mid_read_does_not_block_writer(domain, policy):
    name = shm.segment_name(domain, 'n', f'kill_{policy}')
    with RingWriter(name, 4096, 2, policy, timeout_s=10.0) as w:
        w.write(nbytes=4096, fill=lambda v: fill_pattern(v, 0))
        holder = spawn('hold', name)
        expect_line(holder, 'held')
        assert w.reader_count() == 1
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
        for i in range(1, 50):  # would stall forever (reliable) or lose a slot (latest)
            assert w.write(nbytes=4096, fill=lambda v, i=i: fill_pattern(v, i)) is not None
        assert w.stats.readers_reaped == 1 and w.reader_count() == 0
        assert w.stats.timeouts == 0 and w.stats.dropped_all_pinned == 0


def test_killed_writer_segment_reclaimed_at_next_start(domain):
    name = shm.segment_name(domain, 'w', 't')
    other = shm.segment_name(domain, 'other', 't')
    procs = [spawn('own', n) for n in (name, other)]
    for p in procs:
        expect_line(p, 'ready')
    with pytest.raises(SegmentBusyError):  # a live owner keeps its name
        TensorWriter('w', 't', 64, domain=domain)
    for p in procs:
        p.send_signal(signal.SIGKILL)
        p.wait(10)
    assert os.path.exists(shm.segment_path(name)) and os.path.exists(shm.segment_path(other))
    w = TensorWriter('w', 't', 64, domain=domain)
    assert sorted(w.reclaimed) == sorted([name, other])
    assert shm.list_segments(domain) == [name]
    w.close()
    assert shm.list_segments(domain) == []
    assert reclaim_stale(domain) == []


def test_killed_owner_not_yet_reaped_keeps_no_segment(domain):
    # A zombie (killed, its parent not waiting on it yet): it runs no more, its name is free.
    name = shm.segment_name(domain, 'w', 'zombie')
    p = spawn('own', name)
    expect_line(p, 'ready')
    p.send_signal(signal.SIGKILL)
    deadline = time.monotonic() + 10
    while _state(p.pid) != 'Z' and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _state(p.pid) == 'Z'  # still in the process table, not reaped
    w = TensorWriter('w', 'zombie', 64, domain=domain)
    assert w.reclaimed == [name]
    w.close()
    p.wait(10)


def _state(pid):
    stat_line = open(f'/proc/{pid}/stat').read()
    return stat_line[stat_line.rfind(')') + 2]


def test_sigterm_owner_unlinks(domain):
    name = shm.segment_name(domain, 'w', 'term')
    p = spawn('own', name)
    expect_line(p, 'ready')
    p.send_signal(signal.SIGTERM)
    assert p.wait(10) == -signal.SIGTERM
    assert not os.path.exists(shm.segment_path(name))


def test_reader_rejects_foreign_segment(domain):
    name = shm.segment_name(domain, 'x', 'junk')
    fd = os.open(shm.segment_path(name), os.O_CREAT | os.O_RDWR, 0o600)
    os.ftruncate(fd, 8192)
    os.close(fd)
    with pytest.raises(TransportError, match='not a UniLab ring'):
        RingReader(name)
