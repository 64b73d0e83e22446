# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The doctor's host checks on fabricated /proc and /sys trees: ok, warn and fail each."""

import resource
import subprocess
import types

from doctor_helpers import make_ament_index, make_tree
import pytest
from unilab.doctor import checks as c
from unilab.doctor import probe

INF = resource.RLIM_INFINITY


def facts(root, **kwargs):
    return probe.read_host_facts(root, env=kwargs.pop('env', {}), which=lambda name: None,
                                 **kwargs)


# ---------------------------------------------------------------- parsers
def test_cpulist_parse_and_format():
    assert c.parse_cpulist('0-3,8,10-15:2/4') == {0, 1, 2, 3, 8, 10, 11, 14, 15}
    assert c.parse_cpulist('') == set()
    assert c.format_cpus({0, 1, 2, 5, 7, 8}) == '0-2,5,7-8'
    assert c.format_cpus(set()) == 'none'
    for bad in ('3-1', 'a', '0-3:5/4'):
        with pytest.raises(ValueError):
            c.parse_cpulist(bad)


def test_kernel_params_stop_at_init_arguments():
    params = c.kernel_params('ro isolcpus=managed_irq,domain,2-3 quiet -- isolcpus=9')
    assert params['isolcpus'] == 'managed_irq,domain,2-3' and params['quiet'] == ''
    assert c.isolated_cpus('ro isolcpus=managed_irq,domain,2-3 -- isolcpus=9') == {2, 3}
    assert c.isolated_cpus('isolcpus=1,3') == {1, 3}


def test_interrupts_parse_names_and_counts():
    from doctor_helpers import INTERRUPTS
    table = probe.parse_interrupts(INTERRUPTS)
    assert sorted(table) == [0, 24, 42, 43]  # LOC / NMI are per-CPU, not device IRQs
    assert table[42] == ('nvidia', (300, 0, 17, 0))
    assert table[43][0] == 'ehci_hcd:usb1, uhci_hcd:usb2'


# ---------------------------------------------------------------- kernel
def test_preempt_rt(tmp_path):
    rt = facts(make_tree(tmp_path / 'rt', realtime='1'))
    assert c.check_preempt_rt(rt.realtime_flag, '#1 SMP PREEMPT_DYNAMIC').status == c.OK
    plain = facts(make_tree(tmp_path / 'plain'))
    check = c.check_preempt_rt(plain.realtime_flag, '6.8.0 #1 SMP PREEMPT_DYNAMIC')
    assert check.status == c.WARN and 'PREEMPT_RT' in check.remedy
    assert c.check_preempt_rt(None, '6.8.0-rt8 #1 SMP PREEMPT_RT').status == c.OK


@pytest.mark.parametrize('cmdline, pinned, status, needle', [
    ('ro isolcpus=managed_irq,domain,2-3 nohz_full=2-3 rcu_nocbs=2-3', [3], c.OK, 'on 3'),
    ('ro isolcpus=managed_irq,domain,2-3 nohz_full=2-3', [1], c.WARN, 'CPU 1 is not isolated'),
    ('ro isolcpus=2-3', [3], c.WARN, 'nohz_full= lacks 2-3'),
    ('ro isolcpus=2-3 nohz_full=2-3', [], c.WARN, 'cpu_affinity is []'),
    ('ro quiet', [], c.WARN, 'no isolcpus='),
    ('ro isolcpus=2-x', [], c.WARN, 'bad CPU'),
    ('ro isolcpus=2-3 nohz_full=2-3', [7], c.WARN, 'online are 0-3'),
])
def test_isolcpus(tmp_path, cmdline, pinned, status, needle):
    h = facts(make_tree(tmp_path, cmdline=cmdline))
    check = c.check_isolcpus(h.cmdline, h.online, pinned)
    assert check.status == status and needle in check.detail, check
    assert check.status == c.OK or check.remedy


# ---------------------------------------------------------------- limits
def test_capabilities_from_proc_status(tmp_path):
    bits = (1 << probe.CAP_IPC_LOCK) | (1 << probe.CAP_SYS_NICE)
    h = facts(make_tree(tmp_path / 'caps', cap_eff=f'{bits:016x}'))
    assert h.has_cap(probe.CAP_IPC_LOCK) and h.has_cap(probe.CAP_SYS_NICE)
    h = facts(make_tree(tmp_path / 'none'))
    assert not h.has_cap(probe.CAP_IPC_LOCK) and not h.has_cap(probe.CAP_SYS_NICE)


def test_memlock():
    assert c.check_memlock(INF, INF, False, True).status == c.OK
    assert c.check_memlock(8 << 20, 8 << 20, True, True).status == c.OK  # CAP_IPC_LOCK
    assert c.check_memlock(8 << 20, 8 << 20, False, False).status == c.OK  # not asked
    check = c.check_memlock(8 << 20, 8 << 20, False, True)
    assert check.status == c.WARN and '8.0 MiB' in check.detail
    assert 'memlock unlimited' in check.remedy


def test_rtprio():
    assert c.check_rtprio(99, 99, False, 80).status == c.OK
    assert c.check_rtprio(0, 0, True, 80).status == c.OK  # CAP_SYS_NICE
    assert c.check_rtprio(0, 0, False, 0).status == c.OK  # not asked
    check = c.check_rtprio(0, 0, False, 80)
    assert check.status == c.WARN and 'rtprio 98' in check.remedy
    assert 'ulimit -r 80' in c.check_rtprio(0, 99, False, 80).remedy


@pytest.mark.parametrize('rt, busy, status', [
    (('950000', '1000000'), 0.0, c.OK),
    (('950000', '1000000'), 50.0, c.WARN),
    (('-1', '1000000'), 50.0, c.OK),
    (None, 0.0, c.WARN),
])
def test_rt_runtime(tmp_path, rt, busy, status):
    h = facts(make_tree(tmp_path, rt=rt))
    assert c.check_rt_runtime(h.rt_runtime_us, h.rt_period_us, busy).status == status


@pytest.mark.parametrize('governors, status', [
    ({0: 'performance', 1: 'performance'}, c.OK),
    ({0: 'performance', 1: 'powersave', 2: 'powersave'}, c.WARN),
    ({}, c.OK),  # no cpufreq driver (VM)
])
def test_cpu_governor(tmp_path, governors, status):
    h = facts(make_tree(tmp_path, governors=governors))
    assert h.governors == governors
    check = c.check_cpu_governor(h.governors)
    assert check.status == status
    if status == c.WARN:
        assert 'powersave on 1-2' in check.detail and 'performance' in check.remedy


def test_irq_affinity(tmp_path):
    cmd = 'ro isolcpus=managed_irq,domain,2-3 nohz_full=2-3'
    h = facts(make_tree(tmp_path / 'bad', cmdline=cmd,
                        affinity={0: '0', 24: '0-1', 42: '0-3', 43: '0-1'}))
    check = c.check_irq_affinity(h.irqs, c.isolated_cpus(h.cmdline), h.online)
    assert check.status == c.WARN
    assert '42 (nvidia)' in check.detail and 'enp3s0' not in check.detail
    assert '17 interrupts' in check.detail  # nvidia fired 17 times on CPU 2
    assert 'echo 0-1 > /proc/irq/<N>/smp_affinity_list' in check.remedy
    h = facts(make_tree(tmp_path / 'good', cmdline=cmd,
                        affinity={0: '0', 24: '0-1', 42: '1', 43: '0-1'}))
    assert c.check_irq_affinity(h.irqs, {2, 3}, h.online).status == c.OK
    h = facts(make_tree(tmp_path / 'none'))
    assert c.check_irq_affinity(h.irqs, set(), h.online).status == c.OK


# ---------------------------------------------------------------- /dev/shm
def test_dev_shm(tmp_path):
    total, free = probe.shm_space(make_tree(tmp_path / 'host'))
    assert total and free
    assert c.check_dev_shm(total, free, 1 << 20, 2 << 20, 'composed').status == c.OK
    check = c.check_dev_shm(total, free, 1 << 20, free + 1, 'composed')
    assert check.status == c.WARN and '--multiprocess' in check.detail
    assert c.check_dev_shm(total, free, free + 1, free + 1, 'multiprocess').status == c.FAIL
    missing = probe.shm_space(make_tree(tmp_path / 'bare', shm=False))
    assert missing == (None, None)
    assert c.check_dev_shm(*missing, 1, 1, 'composed').status == c.FAIL


# ---------------------------------------------------------------- clocks
TRACKING = """\
Reference ID    : C0A80001 (gateway)
Stratum         : 3
System time     : {} seconds {} of NTP time
Last offset     : +0.000001000 seconds
"""
PMC = """\
sending: GET TIME_STATUS_NP
\t90e2ba.fffe.123456-0 seq 0 RESPONSE MANAGEMENT TIME_STATUS_NP
\t\tmaster_offset              {}
\t\tingress_time               1700000000000000000
"""


def fake_programs(outputs):
    def which(name):
        return f'/usr/bin/{name}' if name in outputs else None

    def run(args, **kwargs):
        return subprocess.CompletedProcess(args, 0, outputs[args[0]], '')
    return which, run


def clock(root, outputs):
    which, run = fake_programs(outputs)
    return probe.read_clock_facts(root, which, run)


def test_clock_sync_chrony(tmp_path):
    root = make_tree(tmp_path, comms=('bash', 'chronyd'))
    f = clock(root, {'chronyc': TRACKING.format('0.000012000', 'slow')})
    assert f.chrony_offset_s == pytest.approx(-12e-6)
    check = c.check_clock_sync(f)
    assert check.status == c.OK and '-12.0 us' in check.detail
    f = clock(root, {'chronyc': TRACKING.format('0.004000000', 'fast')})
    assert c.check_clock_sync(f).status == c.WARN


def test_clock_sync_ptp(tmp_path):
    f = clock(make_tree(tmp_path / 'a', comms=('ptp4l', 'phc2sys')), {'pmc': PMC.format(-35)})
    check = c.check_clock_sync(f)
    assert f.ptp_offset_ns == -35 and check.status == c.OK and '-35 ns' in check.detail
    f = clock(make_tree(tmp_path / 'b', comms=('ptp4l', 'phc2sys')), {'pmc': PMC.format(5000)})
    assert c.check_clock_sync(f).status == c.WARN
    f = clock(make_tree(tmp_path / 'c', comms=('ptp4l',)), {'pmc': PMC.format(10)})
    check = c.check_clock_sync(f)
    assert check.status == c.WARN and 'no phc2sys' in check.detail


def test_clock_sync_missing(tmp_path):
    f = clock(make_tree(tmp_path / 'a', comms=('bash',)), {'chronyc': ''})
    check = c.check_clock_sync(f)
    assert check.status == c.WARN and 'chronyc installed, not running' in check.detail
    f = clock(make_tree(tmp_path / 'b', comms=('systemd-timesyn',)), {})
    check = c.check_clock_sync(f)
    assert check.status == c.WARN and 'systemd-timesyncd only' in check.detail


# ---------------------------------------------------------------- ROS
def test_rmw(tmp_path):
    prefix = make_ament_index(tmp_path)
    installed = probe.installed_rmws({'AMENT_PREFIX_PATH': prefix})
    assert installed == {'rmw_fastrtps_cpp'}
    assert probe.installed_rmws({}) is None
    assert c.check_rmw({}, installed).status == c.OK
    check = c.check_rmw({'RMW_IMPLEMENTATION': 'rmw_cyclonedds_cpp'}, installed)
    assert check.status == c.FAIL and 'ros-rmw-cyclonedds-cpp' in check.remedy
    check = c.check_rmw({'FASTDDS_BUILTIN_TRANSPORTS': 'UDPv4'}, installed)
    assert check.status == c.WARN and 'no shared memory' in check.detail
    check = c.check_rmw({'FASTDDS_BUILTIN_TRANSPORTS': 'LARGE_DATA?max_msg_size=1MB'},
                        installed)
    assert check.status == c.OK
    other = make_ament_index(tmp_path / 'cyclone', ('rmw_cyclonedds_cpp',))
    both = probe.installed_rmws({'AMENT_PREFIX_PATH': f'{prefix}:{other}'})
    assert c.check_rmw({'RMW_IMPLEMENTATION': 'rmw_cyclonedds_cpp'}, both).status == c.OK


@pytest.mark.parametrize('value, status', [
    (None, c.OK), ('', c.OK), ('42', c.OK), ('150', c.WARN), ('300', c.FAIL), ('-1', c.FAIL),
    ('robot', c.FAIL)])
def test_ros_domain(value, status):
    assert c.check_ros_domain(value).status == status


def test_training_topics_says_where_training_publishes():
    from unilab_core.topics import SIM_REMAPS
    nodes = ['bridge', 'safety']
    ok = c.check_training_topics(nodes, {n: dict(SIM_REMAPS) for n in nodes}, '7')
    assert ok.status == c.OK
    assert '/unilab/sim/joint_states' in ok.detail and '/unilab/sim/clock' in ok.detail
    assert 'domain 7' in ok.detail
    assert 'ROS_DOMAIN_ID unset' in c.check_training_topics(nodes, {}, None).detail
    # One node left on the standard clock would follow (or feed) a robot's /clock.
    bad = c.check_training_topics(nodes, {'bridge': dict(SIM_REMAPS)}, None)
    assert bad.status == c.FAIL and 'safety: /clock' in bad.detail and bad.remedy


# ---------------------------------------------------------------- torch / CUDA
CPU_TORCH = c.TorchFacts('2.13.0+cpu', None, False, 0)
CUDA_TORCH = c.TorchFacts('2.13.0+cu128', '12.8', True, 1)


@pytest.mark.parametrize('torch_facts, requested, gpus, cuda, status, needle', [
    (CPU_TORCH, 'auto', 0, None, c.OK, 'CPU build'),
    (CPU_TORCH, 'cuda', 0, None, c.FAIL, 'CUDA requested'),
    (CPU_TORCH, 'auto', 1, 12040, c.WARN, 'torch is a CPU build'),
    (CUDA_TORCH, 'auto', 1, 12080, c.OK, 'CUDA 12.8'),
    (CUDA_TORCH, 'auto', 1, 12040, c.WARN, 'minor-version'),
    (c.TorchFacts('2.13.0+cu130', '13.0', True, 1), 'cuda', 1, 12080, c.FAIL, 'major'),
    (c.TorchFacts(None), 'auto', 0, None, c.FAIL, 'not importable'),
])
def test_torch_cuda(torch_facts, requested, gpus, cuda, status, needle):
    check = c.check_torch_cuda(torch_facts, requested, gpus, '550.54.15' if cuda else None,
                               cuda)
    assert check.status == status and needle in check.detail, check


def test_graph_capture():
    assert c.check_graph_capture(False, False).status == c.OK
    assert c.check_graph_capture(True, True).status == c.OK
    check = c.check_graph_capture(True, False)
    assert check.status == c.WARN and 'gpu.graph_capture: true' in check.remedy


def test_unreadable_tree_gives_missing_facts(tmp_path):
    h = facts(tmp_path, run=lambda *a, **k: types.SimpleNamespace(returncode=1, stdout=''))
    assert h.cmdline == '' and h.online == set() and h.irqs == [] and h.governors == {}
    assert h.rt_runtime_us is None and h.shm_total is None and h.cap_eff == 0


def test_dds_files_left_behind_or_open_to_others_warn_with_the_remedy():
    assert c.check_dds_files([]).status == c.OK
    ok = c.check_dds_files([('fastdds_1a', 0o600, True)])
    assert ok.status == c.OK and '1 Fast DDS files' in ok.detail
    left = c.check_dds_files([('fastdds_1a', 0o600, False), ('fastdds_1a_el', 0o600, False)])
    assert left.status == c.WARN and '2 Fast DDS files left by processes that are gone' in \
        left.detail and 'fastdds shm clean' in left.remedy
    world = c.check_dds_files([('fastdds_2b', 0o644, True)])
    assert world.status == c.WARN and 'readable by other users (mode 644)' in world.detail
    assert 'fastdds_private.xml' in world.remedy


def test_dds_files_are_found_with_their_mode_and_holder(tmp_path):
    shm = tmp_path / 'dev/shm'
    shm.mkdir(parents=True)
    for name, mode in (('fastdds_live', 0o644), ('fastdds_dead', 0o600), ('unilab_d0_x', 0o600)):
        (shm / name).write_bytes(b'')
        (shm / name).chmod(mode)
    proc = tmp_path / 'proc/123'
    proc.mkdir(parents=True)
    (proc / 'maps').write_text('7f00-7f10 rw-s 0 00:1a 5 /dev/shm/fastdds_live\n')
    (proc / 'fd').mkdir()
    assert probe.read_dds_files(tmp_path) == [('fastdds_dead', 0o600, False),
                                              ('fastdds_live', 0o644, True)]
