# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab doctor``: the troubleshooting table as checks (ok / warn / fail, each with its remedy).

``checks`` and ``gpu_checks`` are pure functions of gathered facts; ``probe``
reads them from ``/proc``, ``/sys``, ``/dev/shm`` and the environment;
NVML is read by ``unilab_core.gpu_health`` (shared with the nodes'
``/diagnostics``); ``rings`` sizes the graph's shared-memory rings;
``report`` runs everything and formats the result.
"""
