# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab doctor``: gather the facts, run every check, print a table or JSON.

``diagnose`` is the whole path (config -> graph -> rings; host facts under
``root``; torch; NVML) with each source replaceable, so a test runs it on a
fabricated tree and a fake NVML. Exit code: 0 when no check fails, 1 when
one does (bad arguments or configuration: 2, from the CLI).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import textwrap

from unilab.doctor.checks import (Check, check_clock_sync, check_cpu_governor, check_dds_files,
                                  check_dev_shm, check_graph_capture, check_irq_affinity,
                                  check_isolcpus, check_memlock, check_preempt_rt, check_rmw,
                                  check_ros_domain, check_rt_runtime, check_rtprio,
                                  check_torch_cuda, check_training_topics, FAIL, isolated_cpus,
                                  STATUSES, TorchFacts)
from unilab.doctor.gpu_checks import check_nvml, GPU_CHECKS, gpu_checks
from unilab.doctor.probe import (CAP_IPC_LOCK, CAP_SYS_NICE, HostFacts, read_host_facts,
                                 read_torch_facts)
from unilab.doctor.rings import graph_rings, shm_need
from unilab_bringup.paths import default_config_files
from unilab_core.config import load_run_config, RunConfig
from unilab_core.gpu_health import gpu_report, GpuReport
from unilab_core.graph import Graph

HOST_CHECKS = ('preempt_rt', 'isolcpus', 'memlock', 'rtprio', 'sched_rt_runtime',
               'cpu_governor', 'irq_affinity', 'dev_shm', 'clock_sync', 'rmw', 'ros_domain_id',
               'training_topics', 'dds_shm')
DEVICE_CHECKS = ('torch_cuda', 'cuda_graphs', 'nvml')
WIDTH = 100
NBSP = '\u00a0'


def check_names(gpu_indices=()) -> list[str]:
    """Return the names ``diagnose`` reports, in order, for GPUs with these indices."""
    return [*HOST_CHECKS, *DEVICE_CHECKS,
            *(f'gpu{i}/{c}' for i in gpu_indices for c in GPU_CHECKS)]


def policy_weight_count(graph: Graph) -> int:
    """Return the float32 values the trainer publishes (network plus normaliser state)."""
    from unilab_policy.networks import bundle_from_params
    from unilab_policy.weights import flatten_state
    return int(flatten_state(bundle_from_params(graph.parameters['trainer']))[0].numel())


def host_checks(h: HostFacts, cfg: RunConfig, need: tuple[int, int],
                graph: Graph) -> list[Check]:
    """
    Run the host checks on gathered facts.

    ``need``: see ``rings.shm_need``; ``graph``: the training graph (its topic names).
    """
    s = cfg.safety
    try:
        isolated = isolated_cpus(h.cmdline)
    except ValueError:  # reported by check_isolcpus
        isolated = set()
    return [
        check_preempt_rt(h.realtime_flag, h.kernel_version),
        check_isolcpus(h.cmdline, h.online, s.cpu_affinity),
        check_memlock(*h.memlock, h.has_cap(CAP_IPC_LOCK), s.mlockall),
        check_rtprio(*h.rtprio, h.has_cap(CAP_SYS_NICE), s.rt_priority),
        check_rt_runtime(h.rt_runtime_us, h.rt_period_us, s.busy_wait_us),
        check_cpu_governor(h.governors),
        check_irq_affinity(h.irqs, isolated, h.online),
        check_dev_shm(h.shm_total, h.shm_free, *need, cfg.run.process_mode),
        check_clock_sync(h.clock),
        check_rmw(h.env, h.rmws),
        check_ros_domain(h.env.get('ROS_DOMAIN_ID')),
        check_training_topics([n.name for n in graph.nodes], graph.remappings,
                              h.env.get('ROS_DOMAIN_ID')),
        check_dds_files(h.dds_files),
    ]


def device_checks(cfg: RunConfig, t: TorchFacts, gpus: GpuReport) -> list[Check]:
    """Run torch, CUDA graph and NVML checks, then the per-GPU ones."""
    device = cfg.run.device
    on_cuda = device.startswith('cuda') or (device == 'auto' and t.cuda_available)
    checks = [check_torch_cuda(t, device, len(gpus.gpus), gpus.driver_version,
                               gpus.cuda_driver_version),
              check_graph_capture(on_cuda, cfg.gpu.graph_capture),
              check_nvml(gpus, device)]
    for g in gpus.gpus:
        checks.extend(gpu_checks(g))
    return checks


def diagnose(config_files=(), root='/', env=None, nvml_import=None, which=shutil.which,
             run=subprocess.run, torch_facts: TorchFacts | None = None) -> list[Check]:
    """
    Return every check for the configuration (defaults plus ``config_files``) on this host.

    ``root``: where ``/proc``, ``/sys`` and ``/dev/shm`` are read; ``env``: the
    environment (default ``os.environ``); ``nvml_import``: returns the NVML
    module (default ``pynvml``); ``which`` / ``run``: find and run helper
    programs; ``torch_facts``: replaces what torch reports.
    """
    from unilab_bringup.graphs import training_graph
    from unilab_bringup.prepare import task_info
    from unilab_perception.perception_node import PASS_THROUGH
    cfg = load_run_config(list(default_config_files()) + list(config_files))
    info, _ = task_info(cfg.run.task)
    # Only the rings' shapes are read: no run directory or limits file is created.
    graph = training_graph(cfg, info, run_dir='runs/doctor', limits_file='joint_limits.yaml')
    rings = graph_rings(graph, policy_weight_count(graph), len(PASS_THROUGH))
    facts = read_host_facts(root, env, which, run)
    return (host_checks(facts, cfg, shm_need(rings, cfg.run.process_mode), graph)
            + device_checks(cfg, torch_facts or read_torch_facts(), gpu_report(nvml_import)))


def exit_code(checks: list[Check]) -> int:
    """Return 1 when any check fails, else 0."""
    return 1 if any(c.status == FAIL for c in checks) else 0


def to_json(checks: list[Check]) -> str:
    """Return the checks as a JSON list of ``{name, status, detail, remedy}``."""
    return json.dumps([c._asdict() for c in checks], indent=2)


def _fill(text: str, width: int, first: str, rest: str) -> str:
    """Wrap ``text`` without breaking a `command` span (its spaces are kept as NBSP meanwhile)."""
    glued = re.sub(r'`[^`]*`', lambda m: m.group(0).replace(' ', NBSP), text)
    wrapped = textwrap.fill(glued, width, initial_indent=first, subsequent_indent=rest,
                            break_long_words=False, break_on_hyphens=False)
    return wrapped.replace(NBSP, ' ')


def format_text(checks: list[Check], width: int = WIDTH) -> str:
    """Return an aligned table: status, name, detail; a ``fix:`` line under each non-ok check."""
    col = max(len(c.name) for c in checks) + 2
    indent = ' ' * (6 + col)
    lines = []
    for c in checks:
        lines.append(_fill(c.detail, width, f'{c.status:<6}{c.name:<{col}}', indent))
        if c.remedy and c.status != 'ok':
            lines.append(_fill(c.remedy, width, indent + 'fix: ', indent + '     '))
    counts = {s: sum(c.status == s for c in checks) for s in STATUSES}
    lines.append(', '.join(f'{n} {s}' for s, n in counts.items()))
    return '\n'.join(lines)
