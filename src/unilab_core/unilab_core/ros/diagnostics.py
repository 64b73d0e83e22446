# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A node's health on ``/diagnostics``: one ``DiagnosticStatus`` per period, judged by ``health``.

The node hands over a function returning its cumulative counters (under the
names of ``unilab_core.health.SHARES`` where they apply) and, optionally, its
own errors and warnings; this class adds the transport's counters of every
tensor endpoint the node holds, the peers missing from the graph, the GPU's
health when the node computes on one (``unilab_core.gpu_health``), and
publishes. The period runs on the steady clock, so a paused simulation still
reports; the stamp is the node's clock (simulated time with ``use_sim_time``),
so ``/diagnostics`` agrees with the topics it describes.
"""

from __future__ import annotations

import time
from typing import Callable

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.clock import Clock, ClockType
from rclpy.node import Node

from unilab_core import gpu_health, health, topics
from unilab_core.health import HealthParams
from unilab_core.ros.tensor_topic import node_endpoints, TensorPublisher, TensorSubscription


def _device_index(device) -> int | None:
    """Return the CUDA device index of a torch device (or its name), None for a CPU."""
    text = str(device)
    if not text.startswith('cuda'):
        return None
    return int(text.split(':', 1)[1]) if ':' in text else 0


class NodeDiagnostics:
    """
    Publish ``node``'s health every ``params.period_s`` (``timer=False``: on ``publish()``).

    ``counters`` returns the node's cumulative counters, ``errors`` its own
    ERROR findings; ``device`` is the torch device the node computes on (None:
    it computes on none, no GPU line).
    """

    def __init__(self, node: Node, params: HealthParams, counters: Callable[[], dict],
                 errors: Callable[[], list[str]] | None = None, device=None,
                 timer: bool = True):
        self.node, self.params = node, params
        self._counters, self._errors = counters, errors
        self.name = node.get_fully_qualified_name()
        self.pub = node.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, 10)
        self.peers = health.PeerWatch(params.peers, params.peer_timeout_s, time.monotonic())
        self._before: dict = {}
        self.last: health.Assessment | None = None
        self._nvml = self._gpu = None
        self._gpu_reason = ''
        self.uses_device = device is not None
        index = None if device is None else _device_index(device)
        if index is not None:
            self._nvml, self._gpu_reason = gpu_health.open_nvml()
            if self._nvml is not None:
                try:
                    self._gpu = self._nvml.nvmlDeviceGetHandleByIndex(index)
                except self._nvml.NVMLError as exc:
                    self._gpu_reason = f'NVML has no device {index}: {exc}'
        if timer:
            # A lambda: rclpy hands a TimerInfo to a callback that takes an argument.
            node.create_timer(params.period_s, lambda: self.publish(),
                              clock=Clock(clock_type=ClockType.STEADY_TIME))

    def transport(self) -> dict[str, int]:
        """Return the summed counters of the node's tensor publishers and subscriptions."""
        eps = node_endpoints(self.node)
        return health.transport_counters(
            [e.counters() for e in eps if isinstance(e, TensorSubscription)],
            [e.stats for e in eps if isinstance(e, TensorPublisher)])

    def status(self, counters: dict | None = None, warnings: list[str] = ()) -> DiagnosticStatus:
        """Take this period's counters (or ``counters``), judge them, return the status."""
        now = dict(self._counters() if counters is None else counters)
        tr = self.transport()
        now.update(tr)
        # The node's own losses and the transport's: one drop share per node.
        now['dropped'] = now.get('dropped', 0) + tr['transport_dropped'] \
            + tr['transport_errors']
        now['messages'] = now.get('messages', 0) + tr['transport_received'] \
            + tr['transport_sent']
        errors = list(self._errors() if self._errors else [])
        warnings = list(warnings)
        if self.peers.peers:
            names = [f'{ns.rstrip("/")}/{n}'
                     for n, ns in self.node.get_node_names_and_namespaces()]
            missing, waiting = self.peers.check(names, time.monotonic())
            errors += missing
            warnings += waiting
        values = {}
        if self.uses_device:
            reading = None
            if self._gpu is not None:
                reading = gpu_health.read_gpu_health(self._gpu, self._nvml)
            gpu, gpu_warn = health.gpu_values(reading, self._gpu_reason)
            values.update(gpu)
            warnings += gpu_warn
        self.last = health.assess(self._before, now, self.params, errors, warnings)
        self._before = now
        st = DiagnosticStatus()
        st.name = self.name
        st.hardware_id = self.params.hardware_id
        st.level = bytes([self.last.level])
        st.message = self.last.message
        values.update({k: round(v, 4) for k, v in self.last.shares.items()})
        values.update(now)
        st.values = [KeyValue(key=str(k), value=str(v)) for k, v in values.items()]
        return st

    def publish(self, counters: dict | None = None,
                warnings: list[str] = ()) -> DiagnosticStatus:
        """Publish one ``DiagnosticArray`` with this node's status, stamped by its clock."""
        arr = DiagnosticArray()
        arr.header.stamp = self.node.get_clock().now().to_msg()
        arr.status = [self.status(counters, warnings)]
        self.pub.publish(arr)
        return arr.status[0]

    def close(self) -> None:
        """Shut NVML down (when this node opened it)."""
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except self._nvml.NVMLError:
                pass
            self._nvml = None
