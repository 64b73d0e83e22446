# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
iceoryx2 plumbing shared by the backend's writer and reader: the process node, services, clean-up.

Each process holds one iceoryx2 node (created on first use, again after a
fork) with the library's signal handling off: SIGINT / SIGTERM stay with
rclpy and ``transport.shm``. The library does the resource work that the
ring does by hand: segments are created owner-only (0600) under
``/dev/shm/iox2_*``; a node records its process, and nodes whose process is
gone (SIGKILL, power loss) are *dead*: ``reclaim_dead_nodes`` removes their
ports and segments (the library also does so whenever a node is created).
"""

from __future__ import annotations

import ctypes
import os
import threading

from unilab_core.transport.iox_layout import (Ack, EVENT_ID_MAX, PAYLOAD_ALIGN, TensorHeader)

_lock = threading.Lock()
_node = None
_node_pid = 0
_quiet = False


def available() -> bool:
    """Return whether the iceoryx2 Python package imports here."""
    try:
        import iceoryx2  # noqa: F401
    except ImportError:
        return False
    return True


def iox():
    """Return the ``iceoryx2`` module (a clear error where it is not installed)."""
    global _quiet
    try:
        import iceoryx2
    except ImportError as exc:
        raise ImportError('the iceoryx2 transport backend needs the `iceoryx2` package '
                          '(requirements.txt pins it): pip install iceoryx2') from exc
    if not _quiet:
        # Errors only (``IOX2_LOG_LEVEL`` overrides): the library's info lines (e.g. that no
        # config file was found, which is how UniLab runs it) would go to every node's log.
        iceoryx2.set_log_level_from_env_or(iceoryx2.LogLevel.Error)
        _quiet = True
    return iceoryx2


def process_node():
    """Return this process's iceoryx2 node (created on first use and after a fork)."""
    global _node, _node_pid
    with _lock:
        if _node is None or _node_pid != os.getpid():
            i = iox()
            _node = (i.NodeBuilder.new().name(i.NodeName.new(f'unilab_{os.getpid()}'))
                     .signal_handling_mode(i.SignalHandlingMode.Disabled)
                     .create(i.ServiceType.Ipc))
            _node_pid = os.getpid()
        return _node


def dead_node_ids() -> set[int]:
    """Return the ids of the iceoryx2 nodes whose process is gone."""
    i = iox()
    return {s._0.id.value for s in i.Node.list(i.ServiceType.Ipc, i.config.global_config())
            if isinstance(s, i.NodeState.Dead)}


def reclaim_dead_nodes() -> list[str]:
    """Remove the ports and segments of dead iceoryx2 nodes; return their names."""
    i = iox()
    gone = []
    for s in i.Node.list(i.ServiceType.Ipc, i.config.global_config()):
        if isinstance(s, i.NodeState.Dead):
            view = s._0
            details = view.details
            name = details.name.as_str() if details is not None else str(view.id.value)
            try:
                # (The binding returns None on success, not the documented bool.)
                if view.try_remove_stale_resources() is not False:
                    gone.append(name)
            except Exception:  # noqa: B902 - another process is cleaning it up right now
                pass
    return gone


def _name(text: str):
    return iox().ServiceName.new(text)


def pubsub(service: str, *, create: dict | None = None):
    """
    Open (``create`` None) or open-or-create the tensor service ``service``.

    ``create``: the service's settings (``max_publishers``, ``max_subscribers``,
    ``buffer``, ``history``, ``safe_overflow``, ``borrowed``), fixed by
    whoever creates it; an opener only needs the payload and header types.
    """
    i = iox()
    b = (process_node().service_builder(_name(service))
         .publish_subscribe(i.Slice[ctypes.c_uint8]).user_header(TensorHeader)
         .payload_alignment(i.Alignment.new(PAYLOAD_ALIGN)))
    if create is None:
        return b.open()
    return (b.max_publishers(create['max_publishers'])
            .max_subscribers(create['max_subscribers'])
            .subscriber_max_buffer_size(create['buffer'])
            .history_size(create['history'])
            .enable_safe_overflow(create['safe_overflow'])
            .subscriber_max_borrowed_samples(create['borrowed'])
            .open_or_create())


def ack_service(service: str, max_readers: int):
    """Open or create the ``<service>/ack`` service (reliable readers' progress)."""
    return (process_node().service_builder(_name(service + '/ack')).publish_subscribe(Ack)
            .max_publishers(max_readers).max_subscribers(4).subscriber_max_buffer_size(64)
            .history_size(0).enable_safe_overflow(True).open_or_create())


def event_service(service: str, suffix: str):
    """Open or create the event service ``<service>/<suffix>`` (``data`` or ``ctl``)."""
    return (process_node().service_builder(_name(f'{service}/{suffix}')).event()
            .event_id_max_value(EVENT_ID_MAX).open_or_create())


def event_id(value: int):
    """Return the iceoryx2 ``EventId`` of ``value``."""
    return iox().EventId.new(value)


def duration(seconds: float):
    """Return an iceoryx2 ``Duration`` of ``seconds`` (at least 1 µs)."""
    return iox().Duration.from_micros(max(1, int(seconds * 1e6)))
