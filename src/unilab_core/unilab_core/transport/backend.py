# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Which cross-process backend a process's tensor publishers use: ``ring`` or ``iceoryx2``.

One process-wide setting, like ``RMW_IMPLEMENTATION`` for ROS: the starters
(``unilab train``, ``--multiprocess`` children, the launch files) put the
run configuration's ``transport.backend`` into ``UNILAB_TRANSPORT_BACKEND``
and every ``TensorPublisher`` of the process reads it, unless a caller
passes ``backend=`` itself (benchmarks, tests). Subscriptions need no
setting: a descriptor names either a ring segment or an iceoryx2 service
(``iox2:...``), and the subscription follows whatever the publisher uses.
The in-process hand-off and the plain-ROS ``TensorBatch`` path do not depend
on it. Figures and the choice of the default: docs/transport.md.
"""

from __future__ import annotations

import os

BACKENDS = ('ring', 'iceoryx2')
#: the default where nothing is configured (see docs/transport.md, "Backends")
DEFAULT = 'ring'
ENV = 'UNILAB_TRANSPORT_BACKEND'


def check(backend: str) -> str:
    """Return ``backend`` if it is one of ``BACKENDS``; ValueError naming the choices if not."""
    if backend not in BACKENDS:
        raise ValueError(f'transport backend `{backend}` is unknown; choose one of '
                         f'{", ".join(BACKENDS)}')
    return backend


def default_backend() -> str:
    """Return this process's backend: ``$UNILAB_TRANSPORT_BACKEND`` or ``DEFAULT``."""
    value = os.environ.get(ENV, '') or DEFAULT
    try:
        return check(value)
    except ValueError as exc:
        raise ValueError(f'{ENV}: {exc}') from None
