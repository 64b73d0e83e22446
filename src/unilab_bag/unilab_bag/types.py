# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The ``rosbags`` type store: ROS 2 Kilted's standard messages plus ours.

``unilab_interfaces/msg/Tensor`` and ``TensorBatch`` are not in rosbags' store;
they are registered from their ``.msg`` files (installed share directory, or
the source tree when run from source) so bags we write carry the full message
definition and any rosbag2 tool can read them. Other message types that a
user records with ``--topics`` are looked up the same way (``share/<pkg>/msg``).
"""

from __future__ import annotations

import functools
import pathlib

from rosbags.typesys import get_types_from_msg, get_typestore, Stores

_SRC_MSG_DIR = pathlib.Path(__file__).resolve().parents[2] / 'unilab_interfaces' / 'msg'
OUR_TYPES = ('unilab_interfaces/msg/Tensor', 'unilab_interfaces/msg/TensorBatch')


class BagTypeError(ValueError):
    """A message type has no definition (not in ROS 2 Kilted, not installed as .msg)."""


def _msg_file(msgtype: str) -> pathlib.Path | None:
    pkg, _, name = msgtype.split('/')
    candidates = []
    try:
        from ament_index_python.packages import get_package_share_directory
        candidates.append(pathlib.Path(get_package_share_directory(pkg)) / 'msg' / f'{name}.msg')
    except Exception:  # noqa: B902 - package not installed / no ament index: try source tree
        pass
    if pkg == 'unilab_interfaces':
        candidates.append(_SRC_MSG_DIR / f'{name}.msg')
    return next((c for c in candidates if c.is_file()), None)


def ensure_type(store, msgtype: str, topic: str = '') -> None:
    """Register ``msgtype`` (``pkg/msg/Name``) in ``store`` from its .msg file if missing."""
    if msgtype in store.fielddefs:
        return
    path = _msg_file(msgtype) if msgtype.count('/') == 2 else None
    where = f' on topic `{topic}`' if topic else ''
    if path is None:
        raise BagTypeError(f'unknown message type `{msgtype}`{where}: not a ROS 2 Kilted '
                           'type and no installed .msg definition found')
    store.register(get_types_from_msg(path.read_text(), msgtype))


@functools.lru_cache(maxsize=1)
def typestore():
    """Return the shared store of message types (Kilted + unilab_interfaces), built once."""
    store = get_typestore(Stores.ROS2_KILTED)
    for t in OUR_TYPES:  # Tensor first: TensorBatch refers to it
        ensure_type(store, t)
    return store


def msgdef(msgtype: str) -> tuple[str, str]:
    """Return (full ros2msg definition incl. dependencies, RIHS01 hash) of ``msgtype``."""
    store = typestore()
    ensure_type(store, msgtype)
    text, _ = store.generate_msgdef(msgtype, ros_version=2)
    return text, store.hash_rihs01(msgtype)
