# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The doctor's host checks as pure functions: facts in, one ``Check`` out.

Nothing here reads a file or calls the system; ``probe.py`` gathers the
facts, so tests hand in fabricated ones. Status words: ``ok`` (nothing to
do), ``warn`` (runs, but latency or throughput suffers, or a robot computer
should be set up differently), ``fail`` (a run with this configuration will
not start or will misbehave). Each non-ok check carries its remedy.

The real-time checks follow the usual PREEMPT_RT set-up for a control loop:
an RT kernel, isolated cores without timer ticks or device interrupts, a
locked memory image and an RT priority the user may take (the Linux
Foundation's "HOWTO setup Linux with PREEMPT_RT properly"; ros2_control's
"Determinism" notes; kernel-parameters.txt for ``isolcpus=``,
``nohz_full=``, ``irqaffinity=``).
"""

from __future__ import annotations

import dataclasses
import re
import resource
from typing import NamedTuple

from unilab_core import topics

OK, WARN, FAIL = 'ok', 'warn', 'fail'
STATUSES = (OK, WARN, FAIL)
MIB = 1 << 20

#: Offsets beyond these are reported: NTP over a LAN holds ~1 ms; hardware-timestamped PTP
#: holds well under 1 us, and sensors stamped by different hosts are aligned no better.
NTP_OFFSET_WARN_S = 1e-3
PTP_OFFSET_WARN_NS = 1000


class Check(NamedTuple):
    """One doctor result: ``status`` is ok / warn / fail; ``remedy`` says what to do."""

    name: str
    status: str
    detail: str
    remedy: str = ''


# ---------------------------------------------------------------------------- helpers
def parse_cpulist(text: str) -> set[int]:
    """
    Parse a kernel CPU list (``0-3,8,10-15:2/4``) into CPU numbers; ValueError if malformed.

    ``a-b:u/g`` takes the first ``u`` CPUs of every group of ``g`` in ``a..b``
    (Documentation/admin-guide/kernel-parameters.rst, "cpu lists").
    """
    cpus: set[int] = set()
    text = text.strip()
    if not text:
        return cpus
    for part in text.split(','):
        m = re.fullmatch(r'(\d+)(?:-(\d+)(?::(\d+)/(\d+))?)?', part.strip())
        if not m:
            raise ValueError(f'bad CPU list item `{part}` in `{text}`')
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else lo
        used, group = (int(m.group(3)), int(m.group(4))) if m.group(3) else (1, 1)
        if hi < lo or group == 0 or used > group:
            raise ValueError(f'bad CPU range `{part}` in `{text}`')
        cpus.update(c for c in range(lo, hi + 1) if (c - lo) % group < used)
    return cpus


def format_cpus(cpus) -> str:
    """Return ``{0, 1, 2, 5}`` as ``0-2,5`` (empty: ``none``)."""
    cpus = sorted(cpus)
    if not cpus:
        return 'none'
    parts, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        parts.append(str(cpus[i]) if i == j else f'{cpus[i]}-{cpus[j]}')
        i = j + 1
    return ','.join(parts)


def kernel_params(cmdline: str) -> dict[str, str]:
    """Return ``key=value`` (and bare ``key``) parameters of a kernel command line."""
    params = {}
    for word in cmdline.split():
        if word == '--':  # the rest goes to init
            break
        key, _, value = word.partition('=')
        params[key] = value
    return params


_ISOLCPUS_FLAGS = {'nohz', 'domain', 'managed_irq'}


def isolated_cpus(cmdline: str) -> set[int]:
    """Return the CPUs ``isolcpus=`` takes out of scheduling (its leading flags skipped)."""
    value = kernel_params(cmdline).get('isolcpus', '')
    items = value.split(',')
    while items and items[0] in _ISOLCPUS_FLAGS:
        items.pop(0)
    return parse_cpulist(','.join(items))


def _mib(n: int) -> str:
    return f'{n / MIB:,.1f} MiB'


# ---------------------------------------------------------------------------- kernel
def check_preempt_rt(realtime_flag: str | None, kernel_version: str) -> Check:
    """Check for a PREEMPT_RT kernel (``/sys/kernel/realtime`` is 1, ``uname -v`` says so)."""
    rt = (realtime_flag or '').strip() == '1' or 'PREEMPT_RT' in kernel_version
    if rt:
        return Check('preempt_rt', OK, f'PREEMPT_RT kernel ({kernel_version.strip()})')
    return Check(
        'preempt_rt', WARN,
        f'not a PREEMPT_RT kernel ({kernel_version.strip() or "version unknown"}): the safety '
        'loop\'s wake-up latency has no bound (fine for training, not for a robot)',
        'on the robot computer boot a PREEMPT_RT kernel (Ubuntu: `pro enable '
        'realtime-kernel`; Debian: linux-image-rt-amd64)')


def check_isolcpus(cmdline: str, online: set[int], safety_cpus: list[int]) -> Check:
    """Check for isolated cores without ticks (``isolcpus=``, ``nohz_full=``) for the loop."""
    params = kernel_params(cmdline)
    remedy_boot = ('add `isolcpus=managed_irq,domain,<cpus> nohz_full=<cpus> rcu_nocbs=<cpus>` '
                   'to GRUB_CMDLINE_LINUX (update-grub, reboot) and set safety.cpu_affinity '
                   'to one of those cores')
    try:
        isolated = isolated_cpus(cmdline)
        nohz = parse_cpulist(params.get('nohz_full', ''))
    except ValueError as exc:
        return Check('isolcpus', WARN, f'kernel command line: {exc}', remedy_boot)
    pinned = set(safety_cpus)
    missing = pinned - online if online else set()
    if missing:
        return Check('isolcpus', WARN,
                     f'safety.cpu_affinity names CPU {format_cpus(missing)}, online are '
                     f'{format_cpus(online)}: the loop\'s pinning is refused',
                     'set safety.cpu_affinity to online CPUs')
    if not isolated:
        return Check('isolcpus', WARN,
                     'no isolcpus= on the kernel command line: the safety loop shares its '
                     'core with everything else', remedy_boot)
    problems = []
    if not isolated <= nohz:
        problems.append(f'nohz_full= lacks {format_cpus(isolated - nohz)} (timer ticks '
                        'still interrupt the loop)')
    if not pinned:
        problems.append('safety.cpu_affinity is [] (the loop may run on any core)')
    elif not pinned <= isolated:
        problems.append(f'safety.cpu_affinity CPU {format_cpus(pinned - isolated)} is not '
                        'isolated')
    detail = f'isolated {format_cpus(isolated)}, nohz_full {format_cpus(nohz)}'
    if problems:
        return Check('isolcpus', WARN, detail + '; ' + '; '.join(problems),
                     f'pin the loop with safety.cpu_affinity: [{max(isolated)}] and list the '
                     'same cores in nohz_full= and rcu_nocbs=')
    return Check('isolcpus', OK, detail + f'; safety loop on {format_cpus(pinned)}')


# ---------------------------------------------------------------------------- limits
def _limit(value: int) -> str:
    return 'unlimited' if value == resource.RLIM_INFINITY else str(value)


def check_memlock(soft: int, hard: int, cap_ipc_lock: bool, mlockall_wanted: bool) -> Check:
    """Check RLIMIT_MEMLOCK, which bounds ``mlockall`` unless CAP_IPC_LOCK lifts it (mlock(2))."""
    unlimited = soft == resource.RLIM_INFINITY
    text = (f'RLIMIT_MEMLOCK {"unlimited" if unlimited else _mib(soft)} (hard '
            f'{"unlimited" if hard == resource.RLIM_INFINITY else _mib(hard)})')
    if not mlockall_wanted:
        return Check('memlock', OK, text + '; safety.mlockall is off')
    if unlimited or cap_ipc_lock:
        return Check('memlock', OK, text + ('; CAP_IPC_LOCK lifts the limit' if cap_ipc_lock
                                            and not unlimited else ''))
    return Check('memlock', WARN,
                 text + ': mlockall of the safety process fails (ENOMEM), so its pages can '
                 'be swapped out and faulted back in mid-loop',
                 '`<user> - memlock unlimited` in /etc/security/limits.d/ (log in again); '
                 'systemd: LimitMEMLOCK=infinity; docker: --ulimit memlock=-1')


def check_rtprio(soft: int, hard: int, cap_sys_nice: bool, wanted: int) -> Check:
    """Check RLIMIT_RTPRIO: the SCHED_FIFO priority an unprivileged process may take."""
    text = f'RLIMIT_RTPRIO {_limit(soft)} (hard {_limit(hard)})'
    if wanted == 0:
        return Check('rtprio', OK, text + '; safety.rt_priority is 0 (not asked)')
    if cap_sys_nice:
        return Check('rtprio', OK, text + f'; CAP_SYS_NICE lifts it: priority {wanted} allowed')
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return Check('rtprio', OK, text + f' >= safety.rt_priority {wanted}')
    remedy = ('`<user> - rtprio 98` in /etc/security/limits.d/ (log in again); systemd: '
              'LimitRTPRIO=98; docker: --ulimit rtprio=99 --cap-add SYS_NICE')
    if hard == resource.RLIM_INFINITY or hard >= wanted:
        remedy = f'raise the soft limit: `ulimit -r {wanted}` before starting'
    return Check('rtprio', WARN,
                 text + f' < safety.rt_priority {wanted}: SCHED_FIFO is refused and the '
                 'safety loop runs as an ordinary (SCHED_OTHER) thread', remedy)


def check_rt_runtime(runtime_us: int | None, period_us: int | None,
                     busy_wait_us: float) -> Check:
    """``sched_rt_runtime_us`` of ``sched_rt_period_us``: the RT budget (sched-rt-group.rst)."""
    if runtime_us is None or period_us is None:
        return Check('sched_rt_runtime', WARN, '/proc/sys/kernel/sched_rt_* unreadable',
                     'check the RT budget by hand: `sysctl kernel.sched_rt_runtime_us`')
    if runtime_us < 0:
        return Check('sched_rt_runtime', OK,
                     'RT throttling off (-1): a runaway SCHED_FIFO thread owns its core')
    text = f'RT tasks may run {runtime_us} of every {period_us} us'
    if busy_wait_us > 0 and runtime_us < period_us:
        return Check('sched_rt_runtime', WARN,
                     text + f'; the safety loop busy-waits (safety.busy_wait_us '
                     f'{busy_wait_us:g}): once it spends the budget it is paused until the '
                     'period ends (tens of ms)',
                     'set safety.busy_wait_us: 0, or on a core-isolated robot computer '
                     '`sysctl -w kernel.sched_rt_runtime_us=-1`')
    return Check('sched_rt_runtime', OK, text + ' (no busy-wait configured)')


def check_cpu_governor(governors: dict[int, str]) -> Check:
    """Check ``scaling_governor`` per CPU: anything but performance ramps clocks after idle."""
    if not governors:
        return Check('cpu_governor', OK, 'no cpufreq interface (VM or fixed clock)')
    slow = {c: g for c, g in governors.items() if g != 'performance'}
    if not slow:
        return Check('cpu_governor', OK, f'performance on {format_cpus(governors)}')
    by_gov: dict[str, list[int]] = {}
    for cpu, gov in slow.items():
        by_gov.setdefault(gov, []).append(cpu)
    text = ', '.join(f'{g} on {format_cpus(c)}' for g, c in sorted(by_gov.items()))
    return Check('cpu_governor', WARN,
                 text + ': the clock ramps up only after a wake-up, so the first cycles of '
                 'each control period run slow',
                 '`cpupower frequency-set -g performance` (at least on the safety cores)')


class IrqInfo(NamedTuple):
    """One device interrupt: number, device name(s), CPUs it may fire on, counts per CPU."""

    irq: int
    name: str
    affinity: frozenset
    counts: tuple = ()


def check_irq_affinity(irqs: list[IrqInfo], isolated: set[int], online: set[int]) -> Check:
    """Check that device interrupts stay off isolated cores (``smp_affinity_list``)."""
    if not isolated:
        return Check('irq_affinity', OK,
                     f'{len(irqs)} device IRQs; no isolated cores to keep them off')
    bad = [q for q in irqs if q.affinity & isolated]
    if not bad:
        return Check('irq_affinity', OK,
                     f'{len(irqs)} device IRQs, none may fire on isolated '
                     f'{format_cpus(isolated)}')
    named = ', '.join(f'{q.irq} ({q.name or "?"})' for q in bad[:8])
    more = f' and {len(bad) - 8} more' if len(bad) > 8 else ''
    fired = sum(q.counts[c] for q in bad for c in isolated if c < len(q.counts))
    house = format_cpus((online or set()) - isolated) if online else '<housekeeping cpus>'
    return Check('irq_affinity', WARN,
                 f'IRQ {named}{more} may fire on isolated {format_cpus(isolated)} '
                 f'({fired} interrupts there so far)',
                 f'`echo {house} > /proc/irq/<N>/smp_affinity_list` for each (or boot with '
                 f'`irqaffinity={house}` and `managed_irq` in isolcpus=; irqbalance: '
                 f'IRQBALANCE_BANNED_CPULIST={format_cpus(isolated)})')


# ---------------------------------------------------------------------------- /dev/shm
def check_dev_shm(total: int | None, free: int | None, need_run: int, need_all: int,
                  mode: str) -> Check:
    """
    Check the room under ``/dev/shm`` for the graph's rings (``rings.py`` has the sizes).

    ``need_run``: what the configured ``run.process_mode`` creates; ``need_all``:
    every ring (one process per node, or an outside reader such as a recorder).
    """
    if total is None or free is None:
        return Check('dev_shm', FAIL, '/dev/shm is missing: the shared-memory transport has '
                     'nowhere to put its rings', 'mount a tmpfs on /dev/shm')
    text = (f'{_mib(free)} free of {_mib(total)}; rings need ~{_mib(need_run)} ({mode}), '
            f'~{_mib(need_all)} with every node in its own process')
    remedy = (f'make /dev/shm larger than {_mib(need_all)} (docker: --shm-size; host: '
              '`mount -o remount,size=2G /dev/shm`), remove stale segments '
              '(`ls /dev/shm`), or lower rollout.num_envs')
    if free < need_run:
        return Check('dev_shm', FAIL, text, remedy)
    if free < need_all:
        return Check('dev_shm', WARN, text + ': --multiprocess or a recorder would run out',
                     remedy)
    return Check('dev_shm', OK, text)


# ---------------------------------------------------------------------------- clocks
@dataclasses.dataclass
class ClockFacts:
    """What is known about time synchronisation on this host."""

    chronyd_running: bool = False
    chrony_offset_s: float | None = None   # ``chronyc tracking``: System time
    ptp4l_running: bool = False
    phc2sys_running: bool = False
    ptp_offset_ns: float | None = None     # ``pmc GET TIME_STATUS_NP``: master_offset
    other_daemon: str = ''                 # ntpd / systemd-timesyncd when running
    installed: tuple = ()                  # chronyc / ptp4l / pmc found on PATH


def check_clock_sync(f: ClockFacts) -> Check:
    """Check for a time-sync daemon (sensor stamps of several hosts must be comparable)."""
    remedy = ('run chrony (`apt install chrony`); for sensors on several hosts or a '
              'hardware-timestamping lidar use PTP: linuxptp ptp4l + phc2sys')
    parts, status = [], OK
    if f.chronyd_running:
        if f.chrony_offset_s is None:
            parts.append('chronyd running (offset unreadable)')
        else:
            parts.append(f'chronyd offset {f.chrony_offset_s * 1e6:+.1f} us')
            if abs(f.chrony_offset_s) > NTP_OFFSET_WARN_S:
                status = WARN
    if f.ptp4l_running:
        phc = '' if f.phc2sys_running else ' (no phc2sys: the system clock is not steered)'
        if f.ptp_offset_ns is None:
            parts.append('ptp4l running (offset unreadable)' + phc)
        else:
            parts.append(f'ptp4l master offset {f.ptp_offset_ns:+.0f} ns' + phc)
            if abs(f.ptp_offset_ns) > PTP_OFFSET_WARN_NS:
                status = WARN
        if not f.phc2sys_running:
            status = WARN
    if not parts:
        if f.other_daemon:
            return Check('clock_sync', WARN, f'{f.other_daemon} only (no offset readable; '
                         'SNTP steps the clock)', remedy)
        found = f' ({", ".join(f.installed)} installed, not running)' if f.installed else ''
        return Check('clock_sync', WARN, 'no time-sync daemon running' + found, remedy)
    if status == WARN:
        return Check('clock_sync', WARN, '; '.join(parts) + f' (limits: NTP '
                     f'{NTP_OFFSET_WARN_S * 1e3:g} ms, PTP {PTP_OFFSET_WARN_NS} ns)',
                     'check the time source and the network path; `chronyc sources -v`, '
                     '`pmc -u -b 0 "GET TIME_STATUS_NP"`; start phc2sys with ptp4l')
    return Check('clock_sync', OK, '; '.join(parts))


# ---------------------------------------------------------------------------- ROS
#: Fast DDS builtin transports (FASTDDS_BUILTIN_TRANSPORTS) that include shared memory.
FASTDDS_SHM_TRANSPORTS = {'DEFAULT', 'DEFAULTV6', 'SHM', 'LARGE_DATA', 'LARGE_DATAV6'}
FASTDDS_OTHER_TRANSPORTS = {'UDPV4', 'UDPV6', 'P2P'}
DEFAULT_RMW = 'rmw_fastrtps_cpp'


def check_rmw(env: dict[str, str], installed: set[str] | None) -> Check:
    """Check the RMW implementation, that it is installed, and its same-host transport."""
    rmw = env.get('RMW_IMPLEMENTATION') or DEFAULT_RMW
    text = rmw + ('' if env.get('RMW_IMPLEMENTATION') else ' (default)')
    if installed is not None and rmw not in installed:
        return Check('rmw', FAIL, f'{text} is not installed (found: '
                     f'{", ".join(sorted(installed)) or "none"})',
                     f'install {rmw} (pip: ros-{rmw.replace("_", "-")}) or unset '
                     'RMW_IMPLEMENTATION')
    if rmw.startswith('rmw_fastrtps'):
        value = env.get('FASTDDS_BUILTIN_TRANSPORTS', '')
        kind = value.split('?')[0].strip().upper() or 'DEFAULT'
        profiles = (env.get('FASTDDS_DEFAULT_PROFILES_FILE')
                    or env.get('FASTRTPS_DEFAULT_PROFILES_FILE'))
        note = f'; profiles file {profiles} may set transports too' if profiles else ''
        if kind in FASTDDS_SHM_TRANSPORTS:
            return Check('rmw', OK, f'{text}, Fast DDS transports {kind} (shared memory on)'
                         + note)
        what = 'no shared memory' if kind in FASTDDS_OTHER_TRANSPORTS else 'unknown value'
        return Check('rmw', WARN,
                     f'{text}, FASTDDS_BUILTIN_TRANSPORTS={value} ({what}): same-host '
                     'descriptors and plain ROS readers go through the loopback interface'
                     + note, 'unset FASTDDS_BUILTIN_TRANSPORTS (DEFAULT = SHM + UDPv4) or '
                     'use LARGE_DATA')
    return Check('rmw', OK, f'{text}; its shared-memory transport is not checked (UniLab\'s '
                 'tensors use their own rings either way)')


def check_dds_files(files: list[tuple[str, int, bool]]) -> Check:
    """
    Check Fast DDS's ``/dev/shm`` files: none readable by others, none left by dead processes.

    ``files``: ``(name, mode, held by a live process)``. Fast DDS's shared-memory
    transport creates its segments with mode 0644 whatever the umask, and a killed
    process leaves them behind (docs/dds.md); UniLab's own processes use the
    private profile (UDP on loopback, no such files) unless told otherwise.
    """
    if not files:
        return Check('dds_shm', OK, 'no Fast DDS files in /dev/shm')
    left = [n for n, _, held in files if not held]
    open_ = [n for n, mode, held in files if held and mode & 0o077]
    problems, remedies = [], []
    if left:
        problems.append(f'{len(left)} Fast DDS files left by processes that are gone '
                        f'({", ".join(left[:3])}{", ..." if len(left) > 3 else ""})')
        remedies.append('remove them: `fastdds shm clean` (Fast DDS tools), or, with no '
                        'ROS 2 process running, `rm /dev/shm/fastdds_* /dev/shm/fastrtps_*`')
    if open_:
        problems.append(f'{len(open_)} Fast DDS segments in use are readable by other users '
                        f'(mode {oct(next(m for n, m, h in files if n == open_[0]))[2:]})')
        remedies.append('start the graph through bin/unilab (private DDS profile by default) '
                        'or export FASTDDS_DEFAULT_PROFILES_FILE=config/fastdds_private.xml '
                        'ROS_AUTOMATIC_DISCOVERY_RANGE=SYSTEM_DEFAULT')
    if problems:
        return Check('dds_shm', WARN, '; '.join(problems), '; '.join(remedies))
    return Check('dds_shm', OK, f'{len(files)} Fast DDS files in /dev/shm, all in use and '
                 'private')


def check_ros_domain(value: str | None) -> Check:
    """Check ``ROS_DOMAIN_ID``: 0-101 are safe on Linux; 102-232 meet ephemeral ports."""
    if value is None or value == '':
        return Check('ros_domain_id', OK, 'ROS_DOMAIN_ID unset (domain 0)')
    remedy = 'export ROS_DOMAIN_ID=<0..101>, the same on every host of the robot'
    try:
        domain = int(value)
    except ValueError:
        return Check('ros_domain_id', FAIL, f'ROS_DOMAIN_ID `{value}` is not an integer',
                     remedy)
    if not 0 <= domain <= 232:
        return Check('ros_domain_id', FAIL, f'ROS_DOMAIN_ID {domain} is outside 0..232 (the '
                     'DDS port formula overflows)', remedy)
    if domain > 101:
        return Check('ros_domain_id', WARN, f'ROS_DOMAIN_ID {domain}: DDS ports of domains '
                     'above 101 fall into Linux\'s ephemeral port range', remedy)
    return Check('ros_domain_id', OK, f'ROS_DOMAIN_ID {domain}')


def check_training_topics(nodes, remappings: dict[str, dict[str, str]],
                          domain: str | None) -> Check:
    """
    Say where training publishes, and fail when it would use a robot's own names.

    ``nodes`` are the training graph's node names, ``remappings`` its
    ``{node: {from: to}}`` (``Graph.remappings``); ``domain`` the value
    of ``ROS_DOMAIN_ID``. A driver's ``joint_state_broadcaster`` publishes
    ``/joint_states`` and every ``use_sim_time`` node follows ``/clock``: a training
    graph on the same domain must keep both off those names (``topics.SIM_REMAPS``).
    """
    where = f'domain {domain}' if domain else 'domain 0 (ROS_DOMAIN_ID unset)'
    own = {name: {src: remappings.get(name, {}).get(src, src) for src in topics.SIM_REMAPS}
           for name in nodes}
    shared = sorted({f'{n}: {src}' for n, m in own.items() for src, dst in m.items()
                     if dst == src})
    if shared:
        return Check('training_topics', FAIL, f'training on {where} uses a robot\'s own '
                     f'names ({", ".join(shared)}): a driver\'s readers and use_sim_time '
                     'nodes on this domain would see the simulator',
                     'remap them as unilab_bringup.graphs.training_graph does '
                     '(unilab_core.topics.SIM_REMAPS)')
    names = sorted({dst for m in own.values() for dst in m.values()})
    return Check('training_topics', OK, f'training publishes {" and ".join(names)} on '
                 f'{where}; a robot\'s /joint_states and /clock there are left alone')


# ---------------------------------------------------------------------------- torch / CUDA
@dataclasses.dataclass
class TorchFacts:
    """What torch reports about itself and CUDA."""

    version: str | None = None       # None: torch not importable
    cuda_build: str | None = None    # torch.version.cuda (None: CPU build)
    cuda_available: bool = False
    device_count: int = 0


def _cuda_tuple(version: str | int | None) -> tuple[int, int] | None:
    if version is None:
        return None
    if isinstance(version, int):  # NVML: 12040 -> (12, 4)
        return version // 1000, version % 1000 // 10
    major, _, minor = str(version).partition('.')
    return int(major), int(minor.split('.')[0] or 0)


def check_torch_cuda(t: TorchFacts, requested: str, gpu_count: int,
                     driver_version: str | None, cuda_driver_version: int | None) -> Check:
    """Check the torch build against the driver, and ``run.device`` against what exists."""
    if t.version is None:
        return Check('torch_cuda', FAIL, 'torch is not importable', 'pip install the pinned '
                     'torch (requirements.txt)')
    build = f'CUDA {t.cuda_build}' if t.cuda_build else 'CPU build'
    driver = (f'driver {driver_version}, CUDA {cuda_driver_version // 1000}.'
              f'{cuda_driver_version % 1000 // 10}' if cuda_driver_version else 'no driver')
    text = (f'torch {t.version} ({build}); {driver}; {t.device_count} CUDA device(s); '
            f'run.device {requested}')
    if requested.startswith('cuda') and not t.cuda_available:
        return Check('torch_cuda', FAIL, text + ': CUDA requested but not available',
                     'set run.device: auto (or cpu), or install a CUDA build of torch and '
                     'the NVIDIA driver')
    want, have = _cuda_tuple(t.cuda_build), _cuda_tuple(cuda_driver_version)
    if want and have and want[0] > have[0]:
        return Check('torch_cuda', FAIL, text + ': the driver is older than torch\'s CUDA '
                     'major version', 'update the NVIDIA driver, or install a torch build for '
                     f'CUDA {have[0]}')
    if want and have and want > have:
        return Check('torch_cuda', WARN, text + ': the driver is older than torch\'s CUDA '
                     '(minor-version compatibility: PTX JIT and some features are missing)',
                     'update the NVIDIA driver')
    if gpu_count and not t.cuda_build:
        return Check('torch_cuda', WARN, text + f': {gpu_count} GPU(s) present but torch is '
                     'a CPU build', 'install a CUDA build of torch (pytorch.org wheel index)')
    return Check('torch_cuda', OK, text)


def check_graph_capture(on_cuda: bool, graph_capture: bool) -> Check:
    """Check ``gpu.graph_capture`` (the policy forward as one CUDA graph launch) on CUDA."""
    if not on_cuda:
        return Check('cuda_graphs', OK, 'device is CPU (gpu.* settings are skipped)')
    if graph_capture:
        return Check('cuda_graphs', OK, 'gpu.graph_capture on')
    return Check('cuda_graphs', WARN, 'gpu.graph_capture is off: every policy step launches '
                 'its kernels one by one (launch overhead dominates small batches)',
                 'set gpu.graph_capture: true')
