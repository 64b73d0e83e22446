# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""GPU health through a fake NVML: link width, throttling, ECC, MIG; the real NVML on a GPU."""

import types

from doctor_helpers import consumer_gpu, FakeNvml, healthy_gpu
import pytest
from unilab.doctor import gpu_checks as gc
from unilab.doctor.checks import FAIL, OK, WARN
from unilab_core import gpu_health


def health(**changes):
    fake = FakeNvml([healthy_gpu(**changes)])
    return gpu_health.read_gpu_health(0, fake)


def statuses(g):
    return {c.name.split('/')[1]: c.status for c in gc.gpu_checks(g)}


def test_healthy_gpu_reads_and_passes():
    g = health()
    assert g['name'] == 'NVIDIA H200' and g['temperature_c'] == 41
    assert g['power_w'] == 120.0 and g['power_limit_w'] == 700.0
    assert g['memory_total_bytes'] == 141 << 30 and g['utilization_gpu_pct'] == 3
    assert g['throttle_reasons'] == ['gpu_idle'] and g['ecc_uncorrected_volatile'] == 0
    assert g['mig_enabled'] is False and g['persistence_mode'] is True
    checks = gc.gpu_checks(g)
    assert [c.name for c in checks] == [f'gpu0/{n}' for n in gc.GPU_CHECKS]
    assert all(c.status == OK for c in checks), checks


def test_consumer_gpu_reports_none_and_passes():
    g = gpu_health.read_gpu_health(0, FakeNvml([consumer_gpu()]))
    assert g['ecc_enabled'] is None and g['mig_enabled'] is None
    assert g['remapped_rows_pending'] is None and g['ecc_uncorrected_volatile'] is None
    by_name = {c.name: c for c in gc.gpu_checks(g)}
    assert by_name['gpu0/ecc'].detail == 'ECC not supported'
    assert by_name['gpu0/mig'].detail == 'MIG not supported'
    assert all(c.status == OK for c in by_name.values())


def test_pcie_width_below_max_warns():
    check = gc.check_pcie_link(health(nvmlDeviceGetCurrPcieLinkWidth=8))
    assert check.status == WARN and 'trained at 8 of 16 lanes' in check.detail
    assert 'reseat' in check.remedy


def test_pcie_generation_drop_only_matters_under_load():
    idle = gc.check_pcie_link(health(nvmlDeviceGetCurrPcieLinkGeneration=1))
    assert idle.status == OK and 'idle' in idle.detail
    busy = health(nvmlDeviceGetCurrPcieLinkGeneration=3,
                  nvmlDeviceGetCurrentClocksEventReasons=0x0)
    assert gc.check_pcie_link(busy).status == WARN


@pytest.mark.parametrize('mask, status, names', [
    (0x0, OK, []),
    (0x1 | 0x2, OK, ['gpu_idle', 'applications_clocks_setting']),
    (0x4, WARN, ['sw_power_cap']),
    (0x20, WARN, ['sw_thermal_slowdown']),
    (0x40, FAIL, ['hw_thermal_slowdown']),
    (0x8 | 0x80, FAIL, ['hw_slowdown', 'hw_power_brake_slowdown']),
])
def test_throttle_reasons(mask, status, names):
    g = health(nvmlDeviceGetCurrentClocksEventReasons=mask)
    assert g['throttle_reasons'] == names
    assert gc.check_throttle(g).status == status


def test_throttle_reasons_through_the_pre_535_name():
    answers = healthy_gpu(nvmlDeviceGetCurrentClocksThrottleReasons=0x40)
    del answers['nvmlDeviceGetCurrentClocksEventReasons']
    g = gpu_health.read_gpu_health(0, FakeNvml([answers]))
    assert g['throttle_reasons'] == ['hw_thermal_slowdown']


def ecc_errors(uncorrected, corrected):
    return lambda kind, counter: {gpu_health.NVML_MEMORY_ERROR_TYPE_UNCORRECTED: uncorrected,
                                  gpu_health.NVML_MEMORY_ERROR_TYPE_CORRECTED: corrected}[kind]


@pytest.mark.parametrize('changes, status, needle', [
    ({'nvmlDeviceGetTotalEccErrors': ecc_errors(0, 3)}, WARN, '0 uncorrected, 3 corrected'),
    ({'nvmlDeviceGetTotalEccErrors': ecc_errors(2, 0)}, FAIL, '2 uncorrected'),
    ({'nvmlDeviceGetRemappedRows': (1, 0, 1, 0)}, FAIL, 'wait for a GPU reset'),
    ({'nvmlDeviceGetRemappedRows': (0, 1, 0, 1)}, FAIL, 'remapping FAILED'),
    ({'nvmlDeviceGetRetiredPagesPendingStatus': 1}, FAIL, 'wait for a GPU reset'),
    ({'nvmlDeviceGetEccMode': [0, 1]}, WARN, 'enabled after the next reset'),
])
def test_ecc_errors(changes, status, needle):
    check = gc.check_ecc(health(**changes))
    assert check.status == status and needle in check.detail, check
    assert check.remedy


@pytest.mark.parametrize('mode, status, needle', [
    ([0, 0], OK, 'MIG off'),
    ([1, 1], WARN, 'CUDA IPC'),
    ([0, 1], WARN, 'pending a GPU reset'),
])
def test_mig(mode, status, needle):
    check = gc.check_mig(health(nvmlDeviceGetMigMode=mode))
    assert check.status == status and needle in check.detail


@pytest.mark.parametrize('temp, status', [(60, OK), (83, WARN), (87, FAIL), (95, FAIL)])
def test_temperature_against_slowdown_threshold(temp, status):
    assert gc.check_temperature(health(nvmlDeviceGetTemperature=lambda s: temp)).status \
        == status


def test_temperature_without_threshold_uses_fallback():
    answers = healthy_gpu(nvmlDeviceGetTemperature=lambda s: gc.FALLBACK_SLOWDOWN_C)
    del answers['nvmlDeviceGetTemperatureThreshold']
    g = gpu_health.read_gpu_health(0, FakeNvml([answers]))
    assert g['temperature_slowdown_c'] is None
    assert gc.check_temperature(g).status == FAIL


def test_power_and_memory_and_persistence():
    capped = gc.check_power(health(nvmlDeviceGetEnforcedPowerLimit=400_000))
    assert capped.status == WARN and 'nvidia-smi -pl 700' in capped.remedy
    full = types.SimpleNamespace(used=100 << 30, total=141 << 30, free=41 << 30)
    assert gc.check_memory(health(nvmlDeviceGetMemoryInfo=full)).status == WARN
    assert gc.check_persistence(health(nvmlDeviceGetPersistenceMode=0)).status == WARN


def test_report_without_nvml_or_devices():
    def missing():
        raise ImportError('no pynvml')
    report = gpu_health.gpu_report(missing)
    assert report.gpus == [] and 'not installed' in report.reason
    fake = FakeNvml([], init_error='NVML Shared Library Not Found')
    report = gpu_health.gpu_report(lambda: fake)
    assert report.gpus == [] and 'Shared Library Not Found' in report.reason
    assert gc.check_nvml(report, 'auto').status == OK
    assert gc.check_nvml(report, 'cuda').status == WARN
    fake = FakeNvml([])
    assert gpu_health.gpu_report(lambda: fake).reason == 'NVML reports no device'
    assert fake.shut_down


def test_report_of_two_gpus():
    fake = FakeNvml([healthy_gpu(), healthy_gpu(nvmlDeviceGetCurrPcieLinkWidth=4)])
    report = gpu_health.gpu_report(lambda: fake)
    assert [g['index'] for g in report.gpus] == [0, 1]
    assert report.driver_version == '550.54.15' and report.cuda_driver_version == 12040
    assert gc.check_pcie_link(report.gpus[1]).name == 'gpu1/pcie_link'
    assert statuses(report.gpus[1])['pcie_link'] == WARN
    assert gc.check_nvml(report, 'auto').status == OK


def _nvml_gpu_present():
    report = gpu_health.gpu_report()
    return bool(report.gpus)


@pytest.mark.skipif(not _nvml_gpu_present(), reason='no NVIDIA GPU / NVML on this machine')
def test_real_nvml():
    report = gpu_health.gpu_report()
    assert report.driver_version and report.cuda_driver_version
    for g in report.gpus:
        assert g['name'] and g['memory_total_bytes'] > 0
        assert g['temperature_c'] is not None and g['throttle_mask'] is not None
        checks = gc.gpu_checks(g)
        assert all(c.status in (OK, WARN, FAIL) for c in checks)
