# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The workspace box from the live graph: the parameters of the node that holds it.

Without ``--model RUN``, the view asks the graph for the box a deploy refuses goals
outside, as ``ros2 param get`` would (``LIVE_SOURCES``): a deploy's ``perception``
checks goals against its ``goal_workspace`` (in ``task_inputs.goal_frame``); a training
run's ``trainer`` checkpoints its task's ``workspace`` (in ``workspace_frame``). The
questions go to each node's standard ``<node>/get_parameters`` service
(``rcl_interfaces/srv/GetParameters``) without blocking a frame; a service client the
view no longer needs is destroyed (each one is a waitable every frame's spin goes over).
"""

from __future__ import annotations

import time

from rcl_interfaces.srv import GetParameters
from rclpy.parameter import parameter_value_to_python
from unilab_view.workspace import parse_workspace

#: The nodes that hold a graph's workspace, asked in this order: (node, box parameter,
#: frame parameter). The deploy's perception refuses goals outside its box (``[]`` where
#: none is checked, as in training); the trainer checkpoints its task's box.
LIVE_SOURCES = (('perception', 'goal_workspace', 'task_inputs.goal_frame'),
                ('trainer', 'workspace', 'workspace_frame'))
#: seconds between two rounds of questions while no node has answered with a box
RETRY_S = 2.0
#: seconds a question may go unanswered before it is dropped (and asked again next round)
ANSWER_TIMEOUT_S = 5.0


class LiveWorkspace:
    """
    The workspace box of the graph under namespace ``ns``, asked without blocking.

    ``poll()`` (once per frame) returns ``(box, frame)`` once a node of ``LIVE_SOURCES``
    answered with one, else None. It asks one node at a time, the first whose parameter
    services are up, and another round every ``retry_s`` while none has answered with a
    box (a deploy started after the view); a node that answers without one (a training
    graph's perception) is not asked again, and once a box came no node is. The answer
    arrives through ``node``'s executor, as the view's messages do.
    """

    def __init__(self, node, ns: str, retry_s: float = RETRY_S):
        base = ns.rstrip('/')
        self.node = node
        self.sources = [(node.create_client(GetParameters, f'{base}/{name}/get_parameters'),
                         box, frame) for name, box, frame in LIVE_SOURCES]
        self.retry_s = retry_s
        self.found = None
        self.pending = None  # (future, source, asked at)
        self.next_round = 0.0
        self.asked = 0  # questions sent

    def poll(self):
        """Return ``(box, frame)`` once known, else None (and ask, when it is time)."""
        if self.found is not None:
            return self.found
        if self.pending is not None:
            future, source, asked_at = self.pending
            if not future.done():
                if time.monotonic() - asked_at < ANSWER_TIMEOUT_S:
                    return None
                # No answer (the node went away mid-call): give up on it, ask again later.
                source[0].remove_pending_request(future)
                self.pending = None
                return None
            self.pending = None
            self.found = _answer(future)
            if self.found is not None:
                self._drop(list(self.sources))
                return self.found
            if future.exception() is None:  # answered, without a box: not asked again
                self._drop([source])
                self.next_round = 0.0
        if time.monotonic() < self.next_round:
            return None
        self.next_round = time.monotonic() + self.retry_s
        for source in self.sources:
            client, box, frame = source
            if client.service_is_ready():
                future = client.call_async(GetParameters.Request(names=[box, frame]))
                self.pending = (future, source, time.monotonic())
                self.asked += 1
                break
        return None

    def _drop(self, sources) -> None:
        """Destroy the service clients of ``sources`` (no longer asked)."""
        for source in sources:
            self.sources.remove(source)
            self.node.destroy_client(source[0])


def _answer(future):
    """Return ``(box, frame)`` of a GetParameters answer, None for none or a failed call."""
    if future.exception() is not None:
        return None
    values = [parameter_value_to_python(v) for v in future.result().values]
    return parse_workspace(*values) if len(values) == 2 else None
