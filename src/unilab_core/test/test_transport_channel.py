# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Named tensors over the ring, bad descriptors, in-process hand-off, CUDA path."""

import dataclasses
import os

import numpy as np
import pytest
from unilab_core.transport import shm
from unilab_core.transport.channel import TensorReader, TensorWriter
from unilab_core.transport.cuda import ipc_available
from unilab_core.transport.descriptor import DescriptorError
from unilab_core.transport.inproc import freeze, InprocRegistry, InprocSubscriber
from unilab_core.transport.ring_layout import H_OWNER_PID


@pytest.fixture
def domain():
    """Yield a private domain number for segment names; remove its leftovers afterwards."""
    d = 60000 + os.getpid() % 50000
    yield d
    for name in shm.list_segments(d):
        os.unlink(shm.segment_path(name))


def _cloud(n=1000, seed=0):
    return np.random.default_rng(seed).random((n, 6), dtype=np.float32)


def test_roundtrip_views_and_loan(domain):
    w = TensorWriter('pub', '/cloud', 1 << 16, 4, 'latest', domain=domain)
    r = TensorReader()
    pts, idx = _cloud(), np.arange(7, dtype=np.int64)
    desc = w.write('cloud', 5, {'points': pts, 'idx': idx}, version=3, stamp_ns=42)
    with r.receive(desc) as got:
        assert np.array_equal(got.tensors['points'], pts)
        assert np.array_equal(got.tensors['idx'], idx)
        assert not got.tensors['points'].flags.writeable
        assert got.tensors['points'].ctypes.data % 64 == 0
        assert desc.seq == 5 and desc.version == 3 and desc.stamp_ns == 42
    loan = w.loan({'points': ((10, 6), np.float32)})
    loan.tensors['points'][:] = 2.5  # built in place: no copy at publish
    desc = loan.publish('cloud', 6)
    with r.receive(desc) as got:
        assert (got.tensors['points'] == 2.5).all() and got.tensors['points'].shape == (10, 6)
    w.close()
    r.close()


def test_bad_descriptors_raise_clear_errors_are_counted_and_reader_continues(domain):
    w = TensorWriter('pub', '/bad', 4096, 2, 'latest', domain=domain)
    r = TensorReader()
    good = w.write('k', 0, {'a': np.ones(16, np.float32)})
    cases = {
        'unknown_segment': [dataclasses.replace(good, segment=f'unilab_d{domain}_nobody_x'),
                            dataclasses.replace(good, segment='../../etc/passwd')],
        'bad_size': [dataclasses.replace(good, payload_bytes=1 << 20),
                     dataclasses.replace(good, slot=9),
                     dataclasses.replace(good, tensors=[dataclasses.replace(
                         good.tensors[0], shape=(1000,))])],
        'bad_layout': [dataclasses.replace(good, tensors=[dataclasses.replace(
            good.tensors[0], dtype='object')])],
    }
    for kind, descs in cases.items():
        for d in descs:
            with pytest.raises(DescriptorError) as exc:
                r.receive(d)
            assert exc.value.kind == kind, str(exc.value)
    for i in range(1, 4):  # overwrite slot of message 0 (2 slots)
        w.write('k', i, {'a': np.full(16, i, np.float32)})
    with pytest.raises(DescriptorError, match='no longer holds message 0') as exc:
        r.receive(good)
    assert exc.value.kind == 'stale'
    assert dict(r.errors) == {'unknown_segment': 2, 'bad_size': 3, 'bad_layout': 1, 'stale': 1}
    d = w.write('k', 9, {'a': np.full(16, 9, np.float32)})
    with r.receive(d) as got:  # still serving after the bad ones
        assert (got.tensors['a'] == 9).all()
    w.close()
    r.close()


def test_reader_follows_restarted_writer(domain):
    w = TensorWriter('pub', '/re', 1024, 2, 'reliable', domain=domain)
    r = TensorReader()
    with r.receive(w.write('k', 0, {'a': np.zeros(4, np.float32)})):
        pass
    w.close()
    w2 = TensorWriter('pub', '/re', 1024, 2, 'reliable', domain=domain)
    d = w2.write('k', 1, {'a': np.ones(4, np.float32)})
    d.writer_pid = w2.pid + 10 ** 6  # a different owner: forces the re-map path
    w2.ring.m.hdr[H_OWNER_PID] = d.writer_pid
    with r.receive(d) as got:
        assert (got.tensors['a'] == 1).all()
    w2.close()
    r.close()


def test_inproc_same_object_read_only_and_policies():
    reg = InprocRegistry()
    got_latest, got_reliable = [], []
    latest = reg.subscribe('t', InprocSubscriber(got_latest.append, depth=1, policy='latest'))
    reliable = reg.subscribe('t', InprocSubscriber(got_reliable.append, depth=2,
                                                   policy='reliable'))
    items = [freeze({'points': _cloud(seed=i)}) for i in range(4)]
    for it in items:
        assert reg.publish('t', it) == 2
    assert latest.drain() == 1 and reliable.drain() == 4
    assert got_latest[0] is items[-1]  # the very same object, no copy
    assert all(a is b for a, b in zip(got_reliable, items))
    assert not items[0]['points'].flags.writeable
    assert latest.stats.skipped == 3 and reliable.stats.stalls == 2
    reg.unsubscribe('t', latest)
    assert reg.count('t') == 1


@pytest.mark.skipif(not ipc_available(), reason='no CUDA device or no cupy')
def test_cuda_ipc_roundtrip(domain):
    import subprocess
    import sys
    import torch
    from unilab_core.transport.cuda import CudaTensorWriter
    w = CudaTensorWriter('pub', '/gpu', 1 << 20, 2, 'reliable', domain=domain)
    t = torch.arange(1000, dtype=torch.float32, device='cuda')
    w.write('k', 0, {'x': t})
    # CUDA IPC handles open only in another process (in-process goes through the registry)
    d = w.write('k', 1, {'x': t * 2})
    code = (
        'import sys, torch\n'
        'from unilab_core.transport.cuda import CudaTensorReader\n'
        'from unilab_core.transport.descriptor import Descriptor, TensorSpec\n'
        f'd = Descriptor("k", 1, "{d.segment}", {d.slot}, {d.slot_seq}, {d.payload_bytes}, '
        f'[TensorSpec("x", "float32", (1000,), 0)], writer_pid={d.writer_pid}, '
        'device="cuda:0")\n'
        'with CudaTensorReader().receive(d) as g:\n'
        '    x = g.tensors["x"]\n'
        '    sys.exit(0 if torch.equal(x, torch.arange(1000, device="cuda").float() * 2) '
        'else 1)\n')
    assert subprocess.run([sys.executable, '-c', code], timeout=120).returncode == 0
    w.close()
