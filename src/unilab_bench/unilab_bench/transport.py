# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab bench transport``: a 2.4 MB point cloud through UniLab's transport vs plain rclpy.

Payload: the PointCloud2 layout of the issue, 100k points x 6 float32 fields
(x, y, z, intensity, ring, time) = 2.4 MB. Paths, all in one run, each at
20 Hz, 100 Hz and flat-out:

* ``noop``: a 16-element ``sum`` under the same pacing: what the machine
  charges any first operation after waiting (cold caches on a shared VM);
* ``memcpy``: ``np.copyto`` of the same bytes into a preallocated buffer
  (the physical reference);
* ``unilab_inproc``: TensorPublisher -> TensorSubscription, two nodes on one
  EventsExecutor (the subscriber gets the publisher's array object);
* ``unilab_inproc_thread``: the same with ``deliver='thread'``: the callback
  runs on the publishing thread inside ``publish()`` (no executor wake-up);
* ``unilab_xproc``: the same pair across processes: ``publish`` copies the
  payload into a shared-memory ring slot and wakes the reader through the
  ring's futex (after the first message the descriptor does not travel over
  DDS); the reader's wake thread schedules the callback on its executor,
  which gets a zero-copy view;
* ``unilab_xproc_loan``: the same, but the publisher writes the cloud into a
  loaned slot (``pub.loan``) and ``publish_loan`` only commits it: the
  timed span starts at ``publish_loan``, so it holds no copy at all. The
  fill (here a ``np.copyto`` standing in for the sensor driver writing its
  data) happens before and is not timed: a producer writes its data
  somewhere anyway; with a loan it writes it into the slot;
* ``unilab_xproc_loan_thread``: the loan, plus ``deliver='thread'``: the
  callback runs on the subscription's wake thread (one thread hop less; for
  thread-safe callbacks only);
* ``unilab_xproc_loan_spin``: the loan, ``deliver='thread'`` and
  ``spin_us=SPIN_US``: after each message the wake thread polls the ring for
  that long before sleeping on the futex (no sleeping-thread wake-up while
  messages keep coming, a busy core meanwhile: ``*_reader_cpu`` is the
  subscriber process's CPU time over its wall time);
* ``unilab_xproc_loan_prewake``: the loan, ``deliver='thread'`` and
  ``prewake_us=PREWAKE_US``: the wake thread estimates the period from the
  arrivals, sleeps until ``PREWAKE_US`` before the next message is due and
  polls until ``PREWAKE_US`` after it (for periodic sensors: no sleeping-thread
  wake-up at 20 or 100 Hz either, about ``2 * PREWAKE_US`` of CPU per message);
* ``iox_xproc``, ``iox_xproc_loan``, ``iox_xproc_loan_thread``: the same three
  cross-process paths with the publisher on the ``iceoryx2`` backend
  (``transport.backend``): one iceoryx2 service per topic, the payload in a
  loaned sample, the reader woken by the library's event; side by side with
  the ring's, in the same run, for the decision rule of docs/transport.md;
* ``rclpy_inproc`` / ``rclpy_xproc``: a sensor_msgs/PointCloud2 published and
  received with plain rclpy (Fast DDS defaults), the array taken with
  ``np.frombuffer`` in the callback.

A second payload, a small control message (``SMALL_SHAPE`` float32: one
command row per environment, 1.5 KB), runs ``memcpy`` and the cross-process
default and loan + thread paths of both backends (keys ``small_*``).

Latency: from the start of the publish call to the subscriber holding a usable
array, both read from CLOCK_MONOTONIC (one clock for all processes on a
machine). Flat-out: the in-process paths publish the next message when the
previous one arrived; the cross-process publishers free-run, so their
latency includes queueing and ``*_msgs_per_s`` is what the reader sustained.
"""

from __future__ import annotations

import json
import os
import platform
import select
import subprocess
import sys
import time

import numpy as np
from unilab_core.testing import isolate_ros_domain

N_POINTS, N_FIELDS = 100_000, 6
#: the small control message: one 6-joint command row for each of 64 environments
SMALL_SHAPE = (64, 6)
#: Poll window of the ``unilab_xproc_loan_spin`` reader after each message (µs).
SPIN_US = 2000.0
#: Lead of the ``unilab_xproc_loan_prewake`` reader: it polls from this long before the
#: next message is due (estimated from the arrivals) to this long after (µs).
PREWAKE_US = 1000.0
RATES = (('20hz', 20.0), ('100hz', 100.0), ('flat', 0.0))
TOPIC = '/bench/cloud'


def _cloud(shape: tuple = (N_POINTS, N_FIELDS)) -> np.ndarray:
    return np.random.default_rng(0).random(shape, dtype=np.float32)


def _split(kind: str) -> tuple[str, str]:
    """Return ``(backend, variant)`` of a cross-process path (``iox_loan`` -> iceoryx2, loan)."""
    backend = 'iceoryx2' if kind.startswith('iox') else 'ring'
    return backend, 'unilab' + kind[len('iox'):] if kind.startswith('iox') else kind


def _pointcloud2(points: np.ndarray):
    import array
    from sensor_msgs.msg import PointCloud2, PointField
    msg = PointCloud2()
    msg.height, msg.width = 1, points.shape[0]
    msg.fields = [PointField(name=n, offset=4 * i, datatype=PointField.FLOAT32, count=1)
                  for i, n in enumerate(('x', 'y', 'z', 'intensity', 'ring', 'time'))]
    msg.point_step, msg.row_step = 4 * N_FIELDS, 4 * N_FIELDS * points.shape[0]
    msg.is_dense = True
    buf = array.array('B')
    buf.frombytes(points.tobytes())
    msg.data = buf
    return msg


def _stamp(msg, t_ns: int) -> None:
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(t_ns, 1_000_000_000)


def _stamp_ns(msg) -> int:
    return msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec


def _summary(lat_ns: list[int], t_first: int, t_last: int, warmup: int) -> dict:
    lat = np.asarray(lat_ns[warmup:], dtype=np.float64) / 1e3
    if lat.size == 0:
        return {'p50_us': None, 'p99_us': None, 'max_us': None, 'msgs_per_s': 0.0, 'n': 0,
                'lat_us': []}
    span = max(t_last - t_first, 1) / 1e9
    return {'p50_us': round(float(np.percentile(lat, 50)), 1),
            'p99_us': round(float(np.percentile(lat, 99)), 1),
            'max_us': round(float(lat.max()), 1),
            'msgs_per_s': round(len(lat_ns) / span, 1), 'n': int(lat.size),
            'lat_us': lat.round(1).tolist()}


def _pace(i: int, t_start: float, hz: float) -> None:
    # Sleep until 2 ms before the send time, then spin: a sleeping vCPU takes ~0.1-0.2 ms
    # to wake on these VMs, which would be charged to whichever path happens to be timed.
    if hz > 0:
        due = t_start + i / hz
        delay = due - time.monotonic() - 2e-3
        if delay > 0:
            time.sleep(delay)
        while time.monotonic() < due:
            pass


# ------------------------------------------------------------------ memcpy
def _memcpy(n: int, hz: float, warmup: int, shape: tuple = (N_POINTS, N_FIELDS)) -> dict:
    src, dst = _cloud(shape), np.empty(shape, np.float32)
    lat, t0 = [], time.monotonic()
    first = time.monotonic_ns()
    for i in range(n):
        _pace(i, t0, hz)
        a = time.monotonic_ns()
        np.copyto(dst, src)
        lat.append(time.monotonic_ns() - a)
    return _summary(lat, first, time.monotonic_ns(), warmup)


def _noop(n: int, hz: float, warmup: int) -> dict:
    """Time a trivial operation under the same pacing: the machine's floor after waiting."""
    x = np.ones(16, np.float32)
    lat, t0 = [], time.monotonic()
    first = time.monotonic_ns()
    for i in range(n):
        _pace(i, t0, hz)
        a = time.monotonic_ns()
        x.sum()
        lat.append(time.monotonic_ns() - a)
    return _summary(lat, first, time.monotonic_ns(), warmup)


# ------------------------------------------------------------------ in-process
def _inproc(kind: str, n: int, hz: float, warmup: int) -> dict:
    import rclpy
    from rclpy.experimental import EventsExecutor
    from rclpy.node import Node
    from unilab_core.ros.runtime import detach_and_shutdown
    from unilab_core.ros.tensor_topic import TensorPublisher, TensorSubscription
    rclpy.init()
    a, b = Node('bench_pub'), Node('bench_sub')
    ex = EventsExecutor()
    ex.add_node(a)
    ex.add_node(b)
    lat: list[int] = []
    pts = _cloud()
    try:
        if kind.startswith('unilab'):
            pub = TensorPublisher(a, TOPIC, pts.nbytes + 4096)

            def on_batch(batch):
                arr = batch.tensors['points']
                lat.append(time.monotonic_ns() - batch.stamp_ns)
                assert arr.shape == (N_POINTS, N_FIELDS)

            # unilab_thread: the callback runs on the publishing thread (deliver='thread')
            sub = TensorSubscription(b, TOPIC, on_batch,
                                     deliver='thread' if kind == 'unilab_thread' else 'executor')

            def send(t_ns):
                pub.publish('points', 0, {'points': pts}, stamp_ns=t_ns)
        else:
            from sensor_msgs.msg import PointCloud2
            pub = a.create_publisher(PointCloud2, TOPIC, 10)
            msg = _pointcloud2(pts)

            def on_cloud(m):
                arr = np.frombuffer(m.data, np.float32).reshape(m.width, N_FIELDS)
                lat.append(time.monotonic_ns() - _stamp_ns(m))
                assert arr.shape == (N_POINTS, N_FIELDS)

            sub = b.create_subscription(PointCloud2, TOPIC, on_cloud, 10)
            deadline = time.monotonic() + 10
            while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
                ex.spin_once(timeout_sec=0.01)

            def send(t_ns):
                _stamp(msg, t_ns)
                pub.publish(msg)
        t0, first = time.monotonic(), time.monotonic_ns()
        for i in range(n):
            _pace(i, t0, hz)
            want = len(lat) + 1
            send(time.monotonic_ns())
            deadline = time.monotonic() + 5
            while len(lat) < want and time.monotonic() < deadline:
                ex.spin_once(timeout_sec=0.01)
        last = time.monotonic_ns()
        if kind.startswith('unilab'):
            sub.close()
    finally:
        detach_and_shutdown(ex, [a, b])
        a.destroy_node()
        b.destroy_node()
        rclpy.try_shutdown()
    return _summary(lat, first, last, warmup)


# ------------------------------------------------------------------ cross-process
def _child(kind: str, n: int, rows: int = N_POINTS) -> None:
    """Run the subscriber process: print one JSON line with receive latencies."""
    import rclpy
    from rclpy.experimental import EventsExecutor
    from rclpy.node import Node
    rclpy.init()
    node = Node('bench_child')
    lat: list[int] = []
    recv: list[int] = []
    cpu_at: list[float] = []
    _, kind = _split(kind)  # the subscription follows the publisher's backend by itself
    if kind.startswith('unilab'):
        from unilab_core.ros.tensor_topic import TensorSubscription

        def on_batch(batch):
            if batch.seq == 0:
                return  # priming: sent until this reader was connected, not timed
            arr = batch.tensors['points']
            now = time.monotonic_ns()
            assert arr.shape[0] == rows
            lat.append(now - batch.stamp_ns)
            recv.append(now)
            cpu_at.append(time.process_time())

        sub = TensorSubscription(
            node, TOPIC, on_batch, qos=10,
            deliver='thread' if kind.endswith(('_thread', '_spin', '_prewake')) else 'executor',
            spin_us=SPIN_US if kind.endswith('_spin') else 0.0,
            prewake_us=PREWAKE_US if kind.endswith('_prewake') else 0.0)
    else:
        from sensor_msgs.msg import PointCloud2

        def on_cloud(m):
            arr = np.frombuffer(m.data, np.float32).reshape(m.width, N_FIELDS)
            now = time.monotonic_ns()
            assert arr.shape == (N_POINTS, N_FIELDS)
            lat.append(now - _stamp_ns(m))
            recv.append(now)
            cpu_at.append(time.process_time())

        sub = node.create_subscription(PointCloud2, TOPIC, on_cloud, 10)
    ex = EventsExecutor()
    ex.add_node(node)
    print('ready', flush=True)
    idle_deadline = time.monotonic() + 60
    while len(lat) < n and time.monotonic() < idle_deadline:
        before = len(lat)
        ex.spin_once(timeout_sec=0.05)
        if len(lat) != before:
            idle_deadline = time.monotonic() + 3.0  # publisher finished or lost messages
    extra = sub.counters() if kind.startswith('unilab') else {}
    # CPU share of the subscriber process between its first and last message.
    span = (recv[-1] - recv[0]) * 1e-9 if len(recv) > 1 else 0.0
    cpu = round((cpu_at[-1] - cpu_at[0]) / span, 3) if span > 0 else None
    print(json.dumps({'lat': lat, 'recv': recv, 'counters': extra, 'reader_cpu': cpu}),
          flush=True)
    ex.shutdown()
    rclpy.try_shutdown()


def _xproc(kind: str, n: int, hz: float, warmup: int,
           shape: tuple = (N_POINTS, N_FIELDS)) -> dict:
    import rclpy
    from rclpy.experimental import EventsExecutor
    from rclpy.node import Node
    from unilab_core.ros.runtime import detach_and_shutdown
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    child = subprocess.Popen([sys.executable, '-m', 'unilab_bench.transport', kind, str(n),
                              str(shape[0])], stdout=subprocess.PIPE, text=True, env=env)
    backend, kind = _split(kind)
    rclpy.init()
    node = Node('bench_pub')
    ex = EventsExecutor()
    ex.add_node(node)
    pts = _cloud(shape)
    try:
        if not select.select([child.stdout], [], [], 60)[0]:
            raise RuntimeError('bench subscriber did not start')
        child.stdout.readline()
        if kind == 'unilab':
            from unilab_core.ros.tensor_topic import TensorPublisher
            pub = TensorPublisher(node, TOPIC, pts.nbytes + 4096, slots=8, backend=backend)
            ready = pub.remote_readers

            def send(seq):
                pub.publish('points', seq, {'points': pts}, stamp_ns=time.monotonic_ns())
        elif kind.startswith('unilab_loan'):
            from unilab_core.ros.tensor_topic import TensorPublisher
            pub = TensorPublisher(node, TOPIC, pts.nbytes + 4096, slots=8, backend=backend)
            ready = pub.remote_readers
            shapes = {'points': (pts.shape, pts.dtype)}

            def send(seq):
                loan = pub.loan(shapes)
                np.copyto(loan.tensors['points'], pts)  # the producer's own write: untimed
                pub.publish_loan(loan, 'points', seq, stamp_ns=time.monotonic_ns())
        else:
            from sensor_msgs.msg import PointCloud2
            pub = node.create_publisher(PointCloud2, TOPIC, 10)
            ready = pub.get_subscription_count
            msg = _pointcloud2(pts)

            def send(_):
                _stamp(msg, time.monotonic_ns())
                pub.publish(msg)
        deadline = time.monotonic() + 20
        while ready() == 0 and time.monotonic() < deadline:
            ex.spin_once(timeout_sec=0.01)
        time.sleep(0.5)  # let discovery settle on both sides (matched reader endpoints)
        if kind.startswith('unilab'):
            # Priming (seq 0, not timed): until the reader maps the ring / subscribes to the
            # iceoryx2 service and sleeps on it, so both backends start connected.
            while time.monotonic() < deadline and (
                    pub.writer is None or pub.writer.wake_reader_count() == 0):
                send(0)
                ex.spin_once(timeout_sec=0.02)
            time.sleep(0.2)
        t0, first = time.monotonic(), time.monotonic_ns()
        for i in range(n):
            _pace(i, t0, hz)
            send(i + 1)
            ex.spin_once(timeout_sec=0)
        if not select.select([child.stdout], [], [], 90)[0]:
            raise RuntimeError('bench subscriber did not report')
        res = json.loads(child.stdout.readline())
        if kind.startswith('unilab'):
            out_pub = dict(pub.stats)
            pub.close()
    finally:
        # Let the subscriber leave the DDS graph on its own before this side tears down
        # (killing it first left discovery traffic racing the node's destruction: rclpy
        # crashed in destroy_node once in about ten runs); kill only a stuck child.
        try:
            child.wait(10)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait(10)
        detach_and_shutdown(ex, [node])
        node.destroy_node()
        rclpy.try_shutdown()
    last = res['recv'][-1] if res['recv'] else time.monotonic_ns()
    out = _summary(res['lat'], first, last, warmup)
    out['received'] = len(res['lat'])
    out['sent'] = n
    out['reader_cpu'] = res.get('reader_cpu')
    if res['counters']:
        out['counters'] = res['counters']
        out['publisher'] = out_pub
    return out


def _plot(results: dict, path: str) -> None:
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, len(RATES), figsize=(15, 4.5), sharey=True)
    for ax, (rate, _) in zip(axes, RATES):
        for mode, res in results.items():
            lat = np.sort(np.asarray(res[rate]['lat_us']))
            if lat.size:  # iceoryx2 dashed: the default colour cycle repeats after ten
                ax.plot(lat, np.linspace(0, 1, lat.size), label=mode,
                        linestyle='--' if mode.startswith('iox') else '-')
        ax.set_xscale('log')
        ax.set_xlabel('latency, publish call -> usable array [us]')
        ax.set_title(f'2.4 MB point cloud, {rate}')
        ax.grid(True, which='both', alpha=0.3)
    axes[0].set_ylabel('fraction of messages (CDF)')
    axes[-1].legend(loc='lower right', fontsize=8)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


#: iceoryx2 becomes the default where it is within this factor of the ring (p50 and p99)
WITHIN = 1.10
#: (iceoryx2 path, ring path) pairs the decision compares, same payload, variant and rate
PAIRS = (('iox_xproc', 'unilab_xproc'), ('iox_xproc_loan', 'unilab_xproc_loan'),
         ('iox_xproc_loan_thread', 'unilab_xproc_loan_thread'),
         ('small_iox_xproc', 'small_unilab_xproc'),
         ('small_iox_xproc_loan_thread', 'small_unilab_xproc_loan_thread'))


def backend_decision(out: dict) -> dict:
    """
    Apply the decision rule of docs/transport.md to one run's figures.

    For every pair and rate: ``iox_vs_ring_<pair>_p50`` / ``_p99`` (iceoryx2 over ring,
    below 1 = iceoryx2 faster) and whether iceoryx2 is within ``WITHIN`` at both.
    ``decision_iceoryx2_default`` is true only where it is within at every pair and rate;
    ``decision_not_within`` lists the cases where it is not, with the ratios.
    """
    res, misses = {}, []
    for iox, ring in PAIRS:
        for sfx in ('_20hz', '', '_flat'):
            ratios = {}
            for q in ('p50', 'p99'):
                a, b = out.get(f'{iox}_{q}_us{sfx}'), out.get(f'{ring}_{q}_us{sfx}')
                ratios[q] = round(a / b, 2) if a and b else None
            key = f'iox_vs_ring_{ring.replace("unilab_", "")}{sfx}'
            res[f'{key}_p50'], res[f'{key}_p99'] = ratios['p50'], ratios['p99']
            ok = all(r is not None and r <= WITHIN for r in ratios.values())
            if not ok:
                misses.append(f'{ring}{sfx or "_100hz"}: p50 x{ratios["p50"]}, '
                              f'p99 x{ratios["p99"]}')
    res['decision_iceoryx2_default'] = not misses
    res['decision_not_within'] = misses
    return res


def _small(kind: str):
    """Return the runner of cross-process path ``kind`` with the small control message."""
    return lambda n, hz, w: _xproc(kind, n, hz, w, SMALL_SHAPE)


def bench_transport(args) -> dict:
    """Run every path at every rate; return the figures (``--png FILE``: draw the CDFs)."""
    isolate_ros_domain()  # our own ROS domain: no crosstalk with a running graph
    n = args.steps or 100
    warmup = min(10, n // 5)
    paths = {
        'noop': _noop,
        'memcpy': _memcpy,
        'unilab_inproc': lambda n, hz, w: _inproc('unilab', n, hz, w),
        'unilab_inproc_thread': lambda n, hz, w: _inproc('unilab_thread', n, hz, w),
        'rclpy_inproc': lambda n, hz, w: _inproc('rclpy', n, hz, w),
        'unilab_xproc': lambda n, hz, w: _xproc('unilab', n, hz, w),
        'unilab_xproc_loan': lambda n, hz, w: _xproc('unilab_loan', n, hz, w),
        'unilab_xproc_loan_thread': lambda n, hz, w: _xproc('unilab_loan_thread', n, hz, w),
        'unilab_xproc_loan_spin': lambda n, hz, w: _xproc('unilab_loan_spin', n, hz, w),
        'unilab_xproc_loan_prewake': lambda n, hz, w: _xproc('unilab_loan_prewake', n, hz,
                                                             w),
        'iox_xproc': lambda n, hz, w: _xproc('iox', n, hz, w),
        'iox_xproc_loan': lambda n, hz, w: _xproc('iox_loan', n, hz, w),
        'iox_xproc_loan_thread': lambda n, hz, w: _xproc('iox_loan_thread', n, hz, w),
        'rclpy_xproc': lambda n, hz, w: _xproc('rclpy', n, hz, w),
    }
    # The small control message: both backends, default and loan + thread.
    small = {
        'small_memcpy': lambda n, hz, w: _memcpy(n, hz, w, SMALL_SHAPE),
        **{f'small_{k}_xproc{v}': _small(f'{k}{v}')
           for k in ('unilab', 'iox') for v in ('', '_loan_thread')},
    }
    results: dict = {}
    for mode, fn in {**paths, **small}.items():
        results[mode] = {}
        for rate, hz in RATES:
            results[mode][rate] = fn(n, hz, warmup)
    plot = getattr(args, 'png', None)
    if plot:
        _plot({k: v for k, v in results.items() if not k.startswith('small_')}, plot)
    out = {'benchmark': 'transport', 'payload_bytes': N_POINTS * N_FIELDS * 4,
           'small_payload_bytes': int(np.prod(SMALL_SHAPE)) * 4,
           'messages_per_case': n, 'warmup_discarded': warmup, 'plot': plot}
    for mode, per_rate in results.items():
        for rate, res in per_rate.items():
            sfx = '' if rate == '100hz' else f'_{rate}'
            for key in ('p50_us', 'p99_us', 'max_us', 'msgs_per_s'):
                out[f'{mode}_{key}{sfx}'] = res[key]
            if 'received' in res:
                out[f'{mode}_received{sfx}'] = f"{res['received']}/{res['sent']}"
            if 'reader_cpu' in res:
                out[f'{mode}_reader_cpu{sfx}'] = res['reader_cpu']
            if 'counters' in res:
                out[f'{mode}_counters{sfx}'] = res['counters']
                out[f'{mode}_publisher{sfx}'] = res['publisher']

    def ratio(a, b):
        return round(a / b, 1) if a and b else None

    for sfx in ('', '_20hz', '_flat'):
        out[f'speedup_xproc_vs_rclpy_p50{sfx}'] = ratio(out[f'rclpy_xproc_p50_us{sfx}'],
                                                        out[f'unilab_xproc_p50_us{sfx}'])
        out[f'speedup_inproc_vs_rclpy_p50{sfx}'] = ratio(out[f'rclpy_inproc_p50_us{sfx}'],
                                                         out[f'unilab_inproc_p50_us{sfx}'])
        out[f'speedup_inproc_thread_vs_rclpy_p50{sfx}'] = ratio(
            out[f'rclpy_inproc_p50_us{sfx}'], out[f'unilab_inproc_thread_p50_us{sfx}'])
        # The in-process target: p50 <= 20 us.
        for var in ('', '_thread'):
            p50 = out[f'unilab_inproc{var}_p50_us{sfx}']
            out[f'target_met_inproc{var}{sfx}'] = bool(p50 is not None and p50 <= 20.0)
        out[f'xproc_vs_memcpy_p50{sfx}'] = ratio(out[f'unilab_xproc_p50_us{sfx}'],
                                                 out[f'memcpy_p50_us{sfx}'])
        for var in ('loan', 'loan_thread', 'loan_spin', 'loan_prewake'):
            mine = out[f'unilab_xproc_{var}_p50_us{sfx}']
            out[f'xproc_{var}_vs_memcpy_p50{sfx}'] = ratio(mine, out[f'memcpy_p50_us{sfx}'])
            out[f'speedup_xproc_{var}_vs_rclpy_p50{sfx}'] = ratio(
                out[f'rclpy_xproc_p50_us{sfx}'], mine)
        # The cross-process target, checked per variant: p50 <= 100 us and no
        # slower than one memcpy of the payload (measured in this run, same rate).
        for var in ('', '_loan', '_loan_thread', '_loan_spin', '_loan_prewake'):
            p50 = out[f'unilab_xproc{var}_p50_us{sfx}']
            out[f'target_met_xproc{var}{sfx}'] = bool(
                p50 is not None and p50 <= 100.0 and p50 <= out[f'memcpy_p50_us{sfx}'])
    out.update(backend_decision(out))
    out['rates'] = 'unsuffixed keys: 100 Hz; _20hz; _flat = flat-out'
    out['machine'] = f'{platform.machine()} {platform.python_version()} {os.cpu_count()} CPUs'
    out['rmw'] = os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp (default)')
    return out


if __name__ == '__main__':
    _child(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]))
