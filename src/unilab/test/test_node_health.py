# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""A node's /diagnostics status as wired by NodeDiagnostics: GPU lines, peers, counters."""

from doctor_helpers import FakeNvml, healthy_gpu
import pytest
from rclpy.node import Node
from unilab_core import gpu_health
from unilab_core.health import HealthParams
from unilab_core.pytest_fixtures import context  # noqa: F401 - the fixture
from unilab_core.ros.diagnostics import NodeDiagnostics


@pytest.fixture
def node(context):  # noqa: F811 - the fixture above
    n = Node('health_probe', context=context)
    yield n
    n.destroy_node()


def _values(status):
    return {kv.key: kv.value for kv in status.values}


def test_a_cpu_node_says_no_gpu_in_one_ok_line(node):
    d = NodeDiagnostics(node, HealthParams(hardware_id='sim/arm6_reach'),
                        lambda: {'messages': 10, 'dropped': 0}, device='cpu', timer=False)
    status = d.status()
    values = _values(status)
    assert (status.level, status.message) == (status.OK, 'ok')
    assert status.name == '/health_probe' and status.hardware_id == 'sim/arm6_reach'
    assert values['gpu'] == 'no GPU in use'
    assert not any(k.startswith('gpu.') for k in values)
    assert values['transport_received'] == '0'


def test_a_gpu_node_reports_nvml_health_and_warns_on_a_thermal_slowdown(node, monkeypatch):
    fake = FakeNvml([healthy_gpu(nvmlDeviceGetCurrentClocksEventReasons=0x40)])
    monkeypatch.setattr(gpu_health, 'open_nvml', lambda: (fake, ''))
    d = NodeDiagnostics(node, HealthParams(), dict, device='cuda:0', timer=False)
    status = d.status()
    values = _values(status)
    assert status.level == status.WARN
    assert status.message == 'GPU slowed down: hw_thermal_slowdown'
    assert values['gpu.name'] == 'NVIDIA H200' and values['gpu.temperature_c'] == '41'
    assert values['gpu.power_limit_w'] == '700.0'
    d.close()
    assert fake.shut_down


def test_a_cuda_node_without_nvml_says_why(node, monkeypatch):
    monkeypatch.setattr(gpu_health, 'open_nvml', lambda: (None, 'NVML unavailable: no driver'))
    status = NodeDiagnostics(node, HealthParams(), dict, device='cuda', timer=False).status()
    assert _values(status)['gpu'] == 'NVML unavailable: no driver'


def test_a_missing_peer_is_an_error_and_shares_follow_the_periods(node):
    counters = {'messages': 100, 'dropped': 50}
    d = NodeDiagnostics(node, HealthParams(peers=['/ghost'], peer_timeout_s=5.0),
                        lambda: dict(counters), timer=False)
    first = d.status()
    assert first.level == first.WARN
    assert first.message == ('waiting for peer /ghost; 50.0 % of messages dropped (> 1 %, '
                             'health.drop_share_warn)')
    counters.update(messages=200)  # 100 more, none dropped
    assert d.status().message == 'waiting for peer /ghost'
    d.peers.start_s -= 10.0  # the peer timeout has passed
    status = d.status()
    assert status.level == status.ERROR
    assert status.message == 'peer /ghost not on the graph after 5 s'
