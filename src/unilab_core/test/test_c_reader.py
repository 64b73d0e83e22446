# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Readers in C: the tensor header layout, and a C program subscribed through iceoryx2."""

import ctypes
import glob
import json
import os
import pathlib
import shutil
import subprocess

import numpy as np
import pytest
from unilab_core.transport import iox_layout
from unilab_core.transport.descriptor import layout_shapes

CSRC = pathlib.Path(__file__).resolve().parent.parent / 'csrc'
#: where the iceoryx2 C bindings may be installed (their CMake install: include/iceoryx2/...)
IOX2_C_PREFIXES = [os.environ.get('IOX2_C_PREFIX', ''), '/usr/local', '/usr', '/opt/iceoryx2']


def _cc() -> str:
    cc = shutil.which('cc') or shutil.which('gcc')
    if cc is None:
        pytest.skip('no C compiler (cc / gcc) on this machine')
    return cc


def _compile(tmp_path, source: str, extra: list[str] = ()) -> str:
    exe = str(tmp_path / pathlib.Path(source).stem)
    subprocess.run([_cc(), '-std=c11', '-O1', '-Wall', '-Werror', '-I', str(CSRC),
                    str(CSRC / source), '-o', exe, *extra], check=True)
    return exe


def test_c_header_matches_the_python_layout_and_reads_a_sample(tmp_path):
    exe = _compile(tmp_path, 'unilab_tensor_header_check.c')
    got = json.loads(subprocess.run([exe], capture_output=True, text=True,
                                    check=True).stdout)
    H, E = iox_layout.TensorHeader, iox_layout.TensorEntry
    assert got == {'header': ctypes.sizeof(H), 'entry': ctypes.sizeof(E),
                   'index': H.index.offset, 'n_tensors': H.n_tensors.offset,
                   'kind': H.kind.offset, 'tensors': H.tensors.offset,
                   'entry_offset': E.offset.offset, 'entry_shape': E.shape.offset}
    # One sample as the Python writer lays it out: header, then the payload.
    x = np.arange(12, dtype=np.float32).reshape(3, 4) + 7
    specs, nbytes = layout_shapes({'flag': ((1,), np.uint8), 'x': (x.shape, x.dtype)})
    payload = np.zeros(nbytes, np.uint8)
    payload[specs[1].offset:specs[1].offset + x.nbytes] = x.view(np.uint8).ravel()
    h = H()
    layout = iox_layout.layout_bytes('action', specs)
    iox_layout.write_header(ctypes.addressof(h), layout, nbytes, index=0, seq=7, version=1,
                            stamp_ns=1, publish_ns=2)
    sample = tmp_path / 'sample.bin'
    sample.write_bytes(bytes(h) + payload.tobytes())
    out = subprocess.run([exe, str(sample)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout
    assert 'ok kind=action seq=7 n=12' in out.stdout


def _iox2_c() -> tuple[str, str] | None:
    """Return (include dir, lib dir) of installed iceoryx2 C bindings, or None."""
    for prefix in filter(None, IOX2_C_PREFIXES):
        for header in glob.glob(f'{prefix}/include/iceoryx2/*/iox2/iceoryx2.h') + \
                glob.glob(f'{prefix}/include/iox2/iceoryx2.h'):
            include = str(pathlib.Path(header).parent.parent)
            for lib in glob.glob(f'{prefix}/lib*/libiceoryx2_ffi_c.so'):
                return include, str(pathlib.Path(lib).parent)
    return None


def test_c_program_reads_a_tensor_topic_through_iceoryx2(tmp_path):
    """A C controller takes the policy's output without Python (skips without the C API)."""
    pytest.importorskip('iceoryx2')
    found = _iox2_c()
    if found is None:
        pytest.skip('iceoryx2 C bindings not installed (they are built from the iceoryx2 '
                    'sources with cargo + CMake; set IOX2_C_PREFIX to their install prefix)')
    include, lib = found
    exe = _compile(tmp_path, 'iox2_tensor_reader.c',
                   ['-I', include, '-L', lib, '-liceoryx2_ffi_c', f'-Wl,-rpath,{lib}'])
    from unilab_core.transport.iox_writer import IoxTensorWriter
    domain = 3000 + os.getpid() % 50000
    w = IoxTensorWriter('/unilab/action', 1 << 16, 4, domain=domain)
    reader = subprocess.Popen([exe, w.service_name, '5'], stdout=subprocess.PIPE, text=True)
    try:
        assert reader.stdout.readline().strip() == 'ready'
        seq = 0
        while reader.poll() is None and seq < 2000:
            seq += 1
            w.write('action', seq, {'x': np.arange(6, dtype=np.float32) + seq})
            try:
                reader.wait(0.01)
            except subprocess.TimeoutExpired:
                pass
        out = reader.stdout.read()
        assert reader.wait(10) == 0, out
        assert 'ok 5' in out
    finally:
        if reader.poll() is None:
            reader.kill()
        w.close()
