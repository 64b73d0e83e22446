# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``unilab doctor`` end to end: on this machine, and on a fabricated host with a fake NVML."""

import json
import re

from conftest import cli, cli_here
from doctor_helpers import FakeNvml, healthy_gpu, make_ament_index, make_tree
from unilab.doctor import report
from unilab.doctor.checks import FAIL, OK, STATUSES, TorchFacts, WARN

ROBOT_CMDLINE = 'ro isolcpus=managed_irq,domain,2-3 nohz_full=2-3 rcu_nocbs=2-3'


def test_doctor_on_this_machine():
    proc = cli('doctor', '--json')
    assert proc.returncode in (0, 1), proc.stderr
    checks = json.loads(proc.stdout)
    names = [c['name'] for c in checks]
    gpus = sorted({int(n.split('/')[0][3:]) for n in names if n.startswith('gpu')})
    assert names == report.check_names(gpus)
    assert all(c['status'] in STATUSES and c['detail'] for c in checks)
    assert proc.returncode == int(any(c['status'] == FAIL for c in checks))
    text = cli('doctor')
    assert text.returncode == proc.returncode
    assert text.stdout.strip().splitlines()[-1].endswith(
        f'{sum(c["status"] == FAIL for c in checks)} fail')


def test_doctor_bad_config_is_a_user_error(tmp_path, capsys):
    bad = tmp_path / 'bad.yaml'
    bad.write_text('safety: {rt_priority: 120}\n')
    proc = cli_here(capsys, 'doctor', '--config', bad)
    assert proc.returncode == 2 and 'safety.rt_priority' in proc.stderr
    assert 'Traceback' not in proc.stderr


def _diagnose(tmp_path, host, gpus, env=None, config=()):
    prefix = make_ament_index(tmp_path / 'ament')
    env = {'AMENT_PREFIX_PATH': prefix, **(env or {})}
    fake = FakeNvml(gpus, cuda=12080)
    return report.diagnose(config, root=host, env=env, nvml_import=lambda: fake,
                           which=lambda name: None,
                           torch_facts=TorchFacts('2.13.0+cu128', '12.8', True, len(gpus)))


def test_doctor_on_a_fabricated_robot_computer(tmp_path):
    """A tuned host with two healthy GPUs: every check ok, every name present, exit 0."""
    cfg = tmp_path / 'robot.yaml'
    cfg.write_text('safety: {cpu_affinity: [3]}\n')
    host = make_tree(tmp_path / 'host', cmdline=ROBOT_CMDLINE, realtime='1',
                     governors={i: 'performance' for i in range(4)},
                     affinity={0: '0', 24: '0-1', 42: '1', 43: '0-1'},
                     cap_eff=f'{(1 << 14) | (1 << 23):016x}', comms=('chronyd', 'ptp4l',
                                                                     'phc2sys'))
    checks = _diagnose(tmp_path, host, [healthy_gpu(), healthy_gpu()], config=[cfg])
    assert [c.name for c in checks] == report.check_names([0, 1])
    not_ok = [c for c in checks if c.status != OK]
    assert not_ok == [], not_ok
    # The training graph's own topic names, said where a robot's computer shows them.
    assert '/unilab/sim/clock' in next(c for c in checks if c.name == 'training_topics').detail
    assert report.exit_code(checks) == 0
    assert json.loads(report.to_json(checks))[0]['name'] == 'preempt_rt'


def test_doctor_on_a_failing_host(tmp_path):
    """A throttling GPU and a bad ROS_DOMAIN_ID fail; the table shows every remedy."""
    host = make_tree(tmp_path / 'host', governors={0: 'powersave'})
    hot = healthy_gpu(nvmlDeviceGetCurrentClocksEventReasons=0x40,
                      nvmlDeviceGetCurrPcieLinkWidth=8)
    checks = _diagnose(tmp_path, host, [hot], env={'ROS_DOMAIN_ID': 'robot'})
    by_name = {c.name: c for c in checks}
    assert by_name['gpu0/throttle'].status == FAIL
    assert by_name['gpu0/pcie_link'].status == WARN
    assert by_name['ros_domain_id'].status == FAIL
    assert by_name['cpu_governor'].status == WARN
    assert report.exit_code(checks) == 1
    text = report.format_text(checks)
    assert all(len(line) <= report.WIDTH for line in text.splitlines())
    for c in checks:
        if c.status != OK:
            assert c.remedy.split()[0] in text
            for command in re.findall(r'`[^`]*`', c.remedy):  # never wrapped mid-command
                assert command in text, command
    assert text.splitlines()[-1].endswith('2 fail')
