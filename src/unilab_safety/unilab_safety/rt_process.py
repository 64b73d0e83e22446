# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The safety loop in its own process: own interpreter, own GIL, pinned, SCHED_FIFO.

A Python thread of the node's process shares the GIL with rclpy's executor
and every other node in a composed process: each wake-up then waits until
the GIL holder lets go (up to the 5 ms switch interval; a C call that holds
the GIL is not interrupted at all). That is the tail the thread mode shows.
Here the loop runs in a child interpreter that imports numpy and the pure
gate modules only (no rclpy, no torch) and talks to the node through one
shared mapping (shm_slots.py) and two eventfds:

- node -> loop: the action slot (seqlock) and an eventfd
  that wakes the loop at once (``WakeableSleeper``: timerfd + eventfd poll);
- loop -> node: the output ring, committed after the counters are written,
  and an eventfd that wakes the node's publisher thread.

The node detects the child's death through a pidfd (``pidfd_open(2)``) polled
with the output eventfd; the child leaves when its parent is gone
(``getppid`` checked every 256 cycles) or when the node sets the stop word.

Start-up handshake: the child applies mlockall / SCHED_FIFO / affinity in its
main thread, builds the gate from the same spec the node validated, and
writes one JSON line to stdout, ``{"granted": {...}}`` or ``{"error": "..."}``.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time

from unilab_safety import shm_slots as sh
from unilab_safety.rt import apply_rt_settings, PeriodStats, RtLoop

_SYNC_EVERY = 16  # cycles between counter updates when nothing was emitted


class _ChildTicker:
    """The child's cycle: run the loop, publish counters, commit outputs, wake the node."""

    def __init__(self, block, loop, ring, reader, stats, wake_out, parent_pid):
        self.block, self.loop, self.ring, self.reader = block, loop, ring, reader
        self.stats, self.wake_out, self.parent_pid = stats, wake_out, parent_pid
        self.ctrl = block.ctrl
        self.n = 0
        self.rt = None

    def tick(self, deadline_ns):
        ctrl, loop = self.ctrl, self.loop
        loop._reset_requests = int(ctrl[sh.C_RESET_REQ])
        loop.armed_request = bool(ctrl[sh.C_ARMED])
        loop.cycle(deadline_ns)
        self.n += 1
        if self.ring.pending or loop._reset_done != int(ctrl[sh.C_RESET_DONE]) \
                or not self.n % _SYNC_EVERY:
            emitted = self.ring.pending
            self.sync()
            self.ring.commit()
            if emitted:
                os.eventfd_write(self.wake_out, 1)
        if ctrl[sh.C_STOP]:
            self.rt._stop = True
        elif not self.n & 255 and os.getppid() != self.parent_pid:
            self.rt._stop = True  # the node is gone: nobody reads our commands

    def sync(self):
        """Write counters and timing figures into the control block (ints only)."""
        ctrl, loop, gate, rt = self.ctrl, self.loop, self.loop.gate, self.rt
        base = sh.C_COUNTERS
        ctrl[base + 0] = gate.passed
        ctrl[base + 1] = gate.clamped
        ctrl[base + 2] = gate.rejected
        ctrl[base + 3] = loop.batches
        ctrl[base + 4] = loop.commands
        ctrl[base + 5] = loop.fallbacks
        ctrl[base + 6] = loop.watchdog.stale_events
        ctrl[base + 7] = loop.estop_events
        ctrl[base + 8] = loop.estop_rows
        ctrl[base + 9] = int(loop.estopped)
        ctrl[base + 10] = gate.workspace_stops
        ctrl[base + 11] = gate.pid_rows
        ctrl[base + 12] = loop.resent
        ctrl[base + 13] = loop.unreferenced
        ctrl[base + 14] = loop.stale_state_actions
        ctrl[base + 15] = int(loop.armed)
        ctrl[base + 16] = loop.unarmed_actions
        ctrl[base + 17] = loop.early_actions
        ctrl[base + 18] = gate.envelope_clamps
        ctrl[base + 19] = gate.tracking_clamps
        ctrl[base + 20] = gate.tracking_holds
        ctrl[base + 21] = gate.tool_speed_clamps
        ctrl[base + 22] = loop.stale_references
        ctrl[sh.C_FALLBACK_DELAY_MAX] = loop.fallback_delay_max_ns
        ctrl[sh.C_CYCLES] = rt.cycles
        ctrl[sh.C_MISSES] = rt.deadline_misses
        ctrl[sh.C_EARLY] = rt.early_cycles
        ctrl[sh.C_STATS_COUNT] = self.stats.count
        ctrl[sh.C_STATS_MAX] = self.stats.max_ns
        ctrl[sh.C_RESET_DONE] = loop._reset_done


def child_main(argv=None):
    """Entry point of the RT process: ``python -m unilab_safety.rt_process JSON``."""
    # Ctrl-C and SIGTERM reach the whole process group: the loop must not die before its
    # node (which stops it through the stop word, and is watched through getppid).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    args = json.loads((argv or sys.argv[1:])[0])
    out = sys.stdout
    block = sh.SharedBlock.attach(args['shm_fd'], args['n_rows'], args['n_joints'],
                                  args['capacity'], args['stats_size'])
    try:
        from unilab_safety.build import as_spec, build_loop
        spec = as_spec(args['spec'])
        s = spec.safety
        # Real-time settings first, in this (the loop's) thread; mlockall covers this
        # small process only.
        granted = apply_rt_settings(s.rt_priority, s.cpu_affinity, s.mlockall)
        reader = sh.ActionReader(block)
        ring = sh.SharedOutputRing(block)
        state = sh.StateReader(block)
        loop = build_loop(spec, reader, ring, state)
        stats = PeriodStats(args['stats_size'], buffer=block.errors)
        ticker = _ChildTicker(block, loop, ring, reader, stats, args['wake_out_fd'],
                              args['parent_pid'])
        rt = RtLoop(ticker.tick, s.rate_hz, s.busy_wait_us, stats=stats,
                    wake_fd=args.get('wake_in_fd'))
        ticker.rt = rt
    except Exception as exc:  # noqa: B902 - reported to the node, which raises it
        block.ctrl[sh.C_STATE] = sh.FAILED
        out.write(json.dumps({'error': f'{type(exc).__name__}: {exc}'}) + '\n')
        out.flush()
        return 2
    block.ctrl[sh.C_STATE] = sh.RUNNING
    out.write(json.dumps({'granted': granted}) + '\n')
    out.flush()
    try:
        rt.run_here()
    except BaseException as exc:  # noqa: B902 - the node sees the state word and exit code
        block.ctrl[sh.C_STATE] = sh.FAILED
        sys.stderr.write(f'unilab_safety rt process: loop failed: {exc!r}\n')
        return 3
    finally:
        ticker.sync()
        ring.commit()
        os.eventfd_write(args['wake_out_fd'], 1)
    block.ctrl[sh.C_STATE] = sh.STOPPED
    return 0


class RtProcess:
    """
    Node-side handle of the RT process; the same interface as ThreadBackend.

    ``put`` hands an action over, ``pop`` returns outputs, ``wait_output``
    blocks the publisher thread until there is output or the child died.
    """

    #: ``put`` only hands the action over; the answer comes from the child
    answers_inline = False

    def __init__(self, spec, capacity=64, stats_size=1 << 16):
        self.spec = spec
        self.n_rows, self.n_joints = spec.num_envs, len(spec.joint_names)
        self.block = sh.SharedBlock.create(self.n_rows, self.n_joints, capacity, stats_size)
        self.block.ctrl[sh.C_ARMED] = int(spec.armed)
        self.capacity, self.stats_size = capacity, stats_size
        self.writer = sh.ActionWriter(self.block)
        self.state_writer = sh.StateWriter(self.block)
        self.reader = sh.ShmOutputReader(self.block)
        self.stats = PeriodStats(stats_size, buffer=self.block.errors)
        self.period_ns = int(round(1e9 / spec.safety.rate_hz))
        # An action wakes the loop at once (answered now, not at the next tick).
        self.wake_in = os.eventfd(0, os.EFD_NONBLOCK)
        self.wake_out = os.eventfd(0, os.EFD_NONBLOCK)
        self.granted = None
        self.proc = None
        self.pidfd = -1
        self._poll = select.poll()
        self._poll.register(self.wake_out, select.POLLIN)
        self._stopping = False
        self._reset_requests = 0

    # -- life cycle --------------------------------------------------------------------
    def start(self, timeout_s=30.0):
        """Start the child and wait for its handshake; raise RuntimeError if it failed."""
        fds = [self.block.fd, self.wake_out] + ([self.wake_in] if self.wake_in else [])
        for fd in fds:
            os.set_inheritable(fd, True)
        args = {'shm_fd': self.block.fd, 'n_rows': self.n_rows, 'n_joints': self.n_joints,
                'capacity': self.capacity, 'stats_size': self.stats_size,
                'wake_out_fd': self.wake_out, 'wake_in_fd': self.wake_in,
                'parent_pid': os.getpid(), 'spec': self.spec.model_dump()}
        env = dict(os.environ)
        # The child must find the same packages as this process (source trees in tests).
        env['PYTHONPATH'] = os.pathsep.join(p for p in sys.path if p)
        self.proc = subprocess.Popen(
            [sys.executable, '-m', 'unilab_safety.rt_process', json.dumps(args)],
            pass_fds=fds, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=env)
        try:
            self.pidfd = os.pidfd_open(self.proc.pid)
            self._poll.register(self.pidfd, select.POLLIN)
        except (AttributeError, OSError):
            self.pidfd = -1  # old kernel: wait_output polls the exit status instead
        hello = self._read_hello(timeout_s)
        if 'error' in hello:
            self.proc.wait(5.0)
            raise RuntimeError(f'safety RT process failed to start: {hello["error"]}')
        self.granted = dict(hello['granted'])
        self.granted['process'] = f'pid {self.proc.pid}'
        return self.granted

    def _read_hello(self, timeout_s):
        out = self.proc.stdout
        ready, _, _ = select.select([out], [], [], timeout_s)
        line = out.readline() if ready else b''
        if not line:
            self.proc.kill()
            self.proc.wait()
            return {'error': f'no handshake within {timeout_s:g} s (exit code '
                             f'{self.proc.returncode})'}
        return json.loads(line)

    def stop(self, timeout_s=2.0):
        """Ask the child to stop, wait for it (kill it after ``timeout_s``)."""
        self._stopping = True
        if self.proc is None:
            return
        self.block.ctrl[sh.C_STOP] = 1
        if self.wake_in is not None:
            os.eventfd_write(self.wake_in, 1)
        try:
            self.proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()

    def close(self):
        """Release fds (after ``stop``; the shared mapping stays readable until here)."""
        # The mapping stays valid without its fd (counters are read after close).
        for fd in (self.pidfd, self.wake_in, self.wake_out, self.block.fd):
            if fd is not None and fd >= 0:
                try:
                    os.close(fd)
                except OSError:
                    pass
        self.pidfd = self.block.fd = -1
        self.wake_in = self.wake_out = None

    @property
    def pid(self):
        """Return the child's process id (None before start)."""
        return None if self.proc is None else self.proc.pid

    @property
    def alive(self):
        """Return True while the child runs its loop."""
        return (self.proc is not None and self.proc.poll() is None
                and int(self.block.ctrl[sh.C_STATE]) == sh.RUNNING)

    @property
    def error(self):
        """Return why the child is gone (None while alive or after a requested stop)."""
        if self.proc is None:
            return None
        rc = self.proc.poll()
        if rc is None and int(self.block.ctrl[sh.C_STATE]) != sh.FAILED:
            return None
        if rc == 0 and self._stopping:
            return None
        return f'rt process exited with code {rc}' if rc is not None else 'rt process failed'

    # -- node -> loop --------------------------------------------------------------------
    def put(self, item):
        """Hand one action over; in lock-step mode wake the loop at once."""
        self.writer.put(item)
        if self.wake_in is not None:
            os.eventfd_write(self.wake_in, 1)

    def put_state(self, positions):
        """Hand the latest measured joint positions [N, J] over (copied into the slot)."""
        self.state_writer.put(positions, time.monotonic_ns())

    def set_armed(self, armed):
        """Let commands reach the actuators (True) or stop them (False)."""
        self.block.ctrl[sh.C_ARMED] = int(bool(armed))

    def request_reset(self):
        """Ask the loop to clear a latched e-stop; return the request id."""
        self._reset_requests += 1
        self.block.ctrl[sh.C_RESET_REQ] = self._reset_requests
        if self.wake_in is not None:
            os.eventfd_write(self.wake_in, 1)
        return self._reset_requests

    def reset_done(self, request_id):
        """Return True once the loop has handled request ``request_id``."""
        return int(self.block.ctrl[sh.C_RESET_DONE]) >= request_id

    # -- loop -> node --------------------------------------------------------------------
    def wait_output(self, timeout_s=None):
        """Block until output is ready, the child is gone, or ``timeout_s`` passed."""
        if self.pidfd < 0 and timeout_s is None:
            timeout_s = 0.1  # no pidfd: poll the exit status now and then
        events = self._poll.poll(None if timeout_s is None else int(timeout_s * 1000))
        for fd, _ in events:
            if fd == self.wake_out:
                try:
                    os.eventfd_read(self.wake_out)
                except BlockingIOError:
                    pass

    def pop(self):
        """Return the oldest unread output entry, or None."""
        return self.reader.pop()

    # -- counters --------------------------------------------------------------------------
    @property
    def estopped(self):
        """Return True while the loop's e-stop is latched."""
        return bool(self.block.ctrl[sh.C_COUNTERS + sh.COUNTER_NAMES.index('estopped')])

    @property
    def fallback_delay_max_ns(self):
        """Return the largest action-to-first-fallback delay (loop time, ns)."""
        return int(self.block.ctrl[sh.C_FALLBACK_DELAY_MAX])

    @property
    def cycles(self):
        """Return the loop's timed cycles."""
        return int(self.block.ctrl[sh.C_CYCLES])

    @property
    def deadline_misses(self):
        """Return the loop's missed deadlines."""
        return int(self.block.ctrl[sh.C_MISSES])

    @property
    def early_cycles(self):
        """Return the cycles run early on an action's wake-up."""
        return int(self.block.ctrl[sh.C_EARLY])

    def counters(self):
        """Return the loop counters, keyed as SafetyLoop does."""
        ctrl = self.block.ctrl
        out = {name: int(ctrl[sh.C_COUNTERS + i]) for i, name in enumerate(sh.COUNTER_NAMES)}
        out['superseded_actions'] = max(0, self.writer.puts - int(ctrl[sh.C_TAKEN]))
        out['output_overruns'] = self.reader.overruns
        return out

    def period_summary(self):
        """Return the period-error percentiles (computed here, off the loop)."""
        self.stats.count = int(self.block.ctrl[sh.C_STATS_COUNT])
        self.stats.max_ns = int(self.block.ctrl[sh.C_STATS_MAX])
        return self.stats.summary()

    def wait_started(self, timeout_s=5.0):
        """Return True once the loop ran a cycle (for tests and the benchmark)."""
        t_end = time.monotonic() + timeout_s
        while self.cycles == 0 and self.alive and time.monotonic() < t_end:
            time.sleep(0.001)
        return self.cycles > 0


if __name__ == '__main__':
    sys.exit(child_main())
