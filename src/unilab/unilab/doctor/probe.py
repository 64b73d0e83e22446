# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Read the doctor's host facts from ``/proc``, ``/sys``, ``/dev/shm``, limits and the environment.

Every file is read relative to ``root`` (default ``/``), so tests point it at
a fabricated tree; an unreadable file is a missing fact (``None`` or empty),
never an exception. Programs (``chronyc``, ``pmc``) are found and run through
the ``which`` and ``run`` arguments, also replaceable in tests. The parsers
are pure functions of the text.
"""

from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import resource
import shutil
import subprocess

from unilab.doctor.checks import ClockFacts, IrqInfo, parse_cpulist, TorchFacts

CAP_IPC_LOCK, CAP_SYS_NICE = 14, 23  # <linux/capability.h>
#: Seconds a helper program (chronyc, pmc) may take before its answer is given up.
PROGRAM_TIMEOUT_S = 2.0


@dataclasses.dataclass
class HostFacts:
    """Everything the host checks look at."""

    cmdline: str = ''
    realtime_flag: str | None = None
    kernel_version: str = ''
    online: set = dataclasses.field(default_factory=set)
    governors: dict = dataclasses.field(default_factory=dict)
    rt_runtime_us: int | None = None
    rt_period_us: int | None = None
    irqs: list = dataclasses.field(default_factory=list)
    shm_total: int | None = None
    shm_free: int | None = None
    memlock: tuple = (0, 0)
    rtprio: tuple = (0, 0)
    cap_eff: int = 0
    clock: ClockFacts = dataclasses.field(default_factory=ClockFacts)
    env: dict = dataclasses.field(default_factory=dict)
    rmws: set | None = None
    #: Fast DDS shared-memory files in /dev/shm: (name, mode, held by a live process).
    dds_files: list = dataclasses.field(default_factory=list)

    def has_cap(self, bit: int) -> bool:
        """Return whether the effective capability ``bit`` is set."""
        return bool(self.cap_eff >> bit & 1)


def read_text(root: str | os.PathLike, rel: str) -> str | None:
    """Return the text of ``root/rel``, or None when it is absent or unreadable."""
    try:
        return (pathlib.Path(root) / rel).read_text()
    except (OSError, UnicodeDecodeError):
        return None


def read_int(root, rel: str) -> int | None:
    """Return ``root/rel`` as an integer, or None."""
    text = read_text(root, rel)
    try:
        return int(text.strip()) if text is not None else None
    except ValueError:
        return None


def read_online(root) -> set[int]:
    """Return the online CPUs (``/sys/devices/system/cpu/online``; empty if unknown)."""
    text = read_text(root, 'sys/devices/system/cpu/online')
    try:
        return parse_cpulist(text) if text else set()
    except ValueError:
        return set()


def read_governors(root) -> dict[int, str]:
    """Return ``{cpu: scaling_governor}`` for CPUs with a cpufreq driver."""
    out = {}
    base = pathlib.Path(root) / 'sys/devices/system/cpu'
    for path in base.glob('cpu[0-9]*/cpufreq/scaling_governor'):
        text = read_text(path.parent, path.name)
        if text is not None:
            out[int(path.parent.parent.name[3:])] = text.strip()
    return dict(sorted(out.items()))


def parse_interrupts(text: str) -> dict[int, tuple[str, tuple[int, ...]]]:
    """
    Parse ``/proc/interrupts`` into ``{irq: (device name, counts per CPU)}``.

    Each numbered line is ``N: <count per CPU> <chip> <hw irq> <name[, name]>``;
    per-CPU sources (LOC, NMI, ...) have no number and are left out.
    """
    lines = text.splitlines()
    if not lines:
        return {}
    ncpu = len(lines[0].split())
    out = {}
    for line in lines[1:]:
        head, _, rest = line.partition(':')
        if not head.strip().isdigit():
            continue
        fields = rest.split()
        counts = tuple(int(x) for x in fields[:ncpu] if x.isdigit())
        tail = fields[len(counts):]
        name = ' '.join(tail[2:]) if len(tail) > 2 else ' '.join(tail)
        out[int(head)] = (name, counts)
    return out


def read_irqs(root) -> list[IrqInfo]:
    """Return the device interrupts with their ``smp_affinity_list`` (readable ones only)."""
    table = parse_interrupts(read_text(root, 'proc/interrupts') or '')
    irqs = []
    for irq, (name, counts) in sorted(table.items()):
        text = read_text(root, f'proc/irq/{irq}/smp_affinity_list')
        if text is None:
            continue
        try:
            cpus = frozenset(parse_cpulist(text))
        except ValueError:
            continue
        irqs.append(IrqInfo(irq, name, cpus, counts))
    return irqs


def read_cap_eff(root) -> int:
    """Return this process's effective capability mask (``CapEff`` of /proc/self/status)."""
    m = re.search(r'^CapEff:\s*([0-9a-fA-F]+)', read_text(root, 'proc/self/status') or '',
                  re.MULTILINE)
    return int(m.group(1), 16) if m else 0


def running_commands(root) -> set[str]:
    """Return the command names (``/proc/<pid>/comm``) of running processes."""
    names = set()
    for path in (pathlib.Path(root) / 'proc').glob('[0-9]*/comm'):
        text = read_text(path.parent, 'comm')
        if text:
            names.add(text.strip())
    return names


def parse_chrony_tracking(text: str) -> float | None:
    """Return the system clock's offset in s from ``chronyc tracking`` (+: clock ahead)."""
    m = re.search(r'^System time\s*:\s*([0-9.eE+-]+) seconds (fast|slow)', text, re.MULTILINE)
    if not m:
        return None
    value = float(m.group(1))
    return value if m.group(2) == 'fast' else -value


def parse_pmc_offset(text: str) -> float | None:
    """Return ``master_offset`` in ns from ``pmc 'GET TIME_STATUS_NP'``."""
    m = re.search(r'^\s*master_offset\s+(-?\d+)', text, re.MULTILINE)
    return float(m.group(1)) if m else None


def _program_output(run, args: list[str]) -> str | None:
    try:
        proc = run(args, capture_output=True, text=True, timeout=PROGRAM_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return proc.stdout if proc.returncode == 0 else None


def read_clock_facts(root, which=shutil.which, run=subprocess.run) -> ClockFacts:
    """Which time-sync daemons run, and their offsets where a client can read them."""
    running = running_commands(root)
    f = ClockFacts(chronyd_running='chronyd' in running, ptp4l_running='ptp4l' in running,
                   phc2sys_running='phc2sys' in running,
                   installed=tuple(p for p in ('chronyc', 'ptp4l', 'pmc') if which(p)))
    # comm is cut at 15 characters: systemd-timesyncd reads systemd-timesyn.
    others = sorted(n for n in running if n in ('ntpd', 'systemd-timesyn', 'openntpd'))
    f.other_daemon = ', '.join('systemd-timesyncd' if n.startswith('systemd') else n
                               for n in others)
    if f.chronyd_running and which('chronyc'):
        out = _program_output(run, ['chronyc', 'tracking'])
        f.chrony_offset_s = parse_chrony_tracking(out) if out else None
    if f.ptp4l_running and which('pmc'):
        out = _program_output(run, ['pmc', '-u', '-b', '0', 'GET TIME_STATUS_NP'])
        f.ptp_offset_ns = parse_pmc_offset(out) if out else None
    return f


def installed_rmws(env: dict[str, str]) -> set[str] | None:
    """Return the RMW implementations in the ament index (None: no AMENT_PREFIX_PATH)."""
    prefixes = [p for p in env.get('AMENT_PREFIX_PATH', '').split(os.pathsep) if p]
    if not prefixes:
        return None
    found = set()
    for prefix in prefixes:
        index = pathlib.Path(prefix) / 'share/ament_index/resource_index/rmw_typesupport'
        if index.is_dir():
            found.update(p.name for p in index.iterdir() if p.name != 'rmw_implementation')
    return found


def shm_space(root) -> tuple[int | None, int | None]:
    """Return ``(total, free)`` bytes of the file system holding ``/dev/shm``."""
    try:
        st = os.statvfs(pathlib.Path(root) / 'dev/shm')
    except OSError:
        return None, None
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


def read_dds_files(root) -> list[tuple[str, int, bool]]:
    """
    List Fast DDS's files in ``/dev/shm`` as ``(name, mode, held)``.

    ``held``: a running process maps the file (its ``/proc/<pid>/maps`` names
    it) or holds it open; a file no process holds was left by one that died.
    """
    shm = pathlib.Path(root) / 'dev/shm'
    try:
        files = sorted(p for p in shm.iterdir() if p.name.startswith(('fastdds_', 'fastrtps_')))
    except OSError:
        return []
    held: set[str] = set()
    proc = pathlib.Path(root) / 'proc'
    for pid in proc.glob('[0-9]*'):
        try:
            held.update(line.rsplit('/', 1)[-1] for line in (pid / 'maps').read_text()
                        .splitlines() if '/dev/shm/fast' in line)
            held.update(os.readlink(fd).rsplit('/', 1)[-1] for fd in (pid / 'fd').iterdir()
                        if os.readlink(fd).startswith('/dev/shm/fast'))
        except OSError:  # gone meanwhile, or not ours to read
            continue
    out = []
    for f in files:
        try:
            mode = f.stat().st_mode & 0o777
        except OSError:
            continue
        out.append((f.name, mode, f.name in held))
    return out


def read_host_facts(root: str | os.PathLike = '/', env: dict[str, str] | None = None,
                    which=shutil.which, run=subprocess.run) -> HostFacts:
    """Gather every host fact (files under ``root``; limits and uname of this process)."""
    env = dict(os.environ if env is None else env)
    uname = os.uname()
    total, free = shm_space(root)
    return HostFacts(
        cmdline=read_text(root, 'proc/cmdline') or '',
        realtime_flag=read_text(root, 'sys/kernel/realtime'),
        kernel_version=f'{uname.release} {uname.version}',
        online=read_online(root),
        governors=read_governors(root),
        rt_runtime_us=read_int(root, 'proc/sys/kernel/sched_rt_runtime_us'),
        rt_period_us=read_int(root, 'proc/sys/kernel/sched_rt_period_us'),
        irqs=read_irqs(root),
        shm_total=total, shm_free=free,
        memlock=resource.getrlimit(resource.RLIMIT_MEMLOCK),
        rtprio=resource.getrlimit(resource.RLIMIT_RTPRIO),
        cap_eff=read_cap_eff(root),
        clock=read_clock_facts(root, which, run),
        env=env,
        rmws=installed_rmws(env),
        dds_files=read_dds_files(root),
    )


def read_torch_facts() -> TorchFacts:
    """Return torch's version and what it sees of CUDA (None version: not importable)."""
    try:
        import torch
    except ImportError:
        return TorchFacts()
    available = torch.cuda.is_available()
    return TorchFacts(torch.__version__, torch.version.cuda, available,
                      torch.cuda.device_count() if available else 0)
