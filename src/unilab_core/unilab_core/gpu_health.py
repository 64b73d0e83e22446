# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
GPU health through NVML (``nvidia-ml-py``, imported as ``pynvml``), as plain dicts.

``open_nvml()`` is the one place that touches the driver: it returns the
initialised module, or ``None`` and the reason (package missing, no driver,
no device), so callers on a CPU-only machine never see an exception.
``read_gpu_health(handle, nvml)`` reads one device into a flat dict whose
values are ``None`` where the device does not report them (NVML answers
``NotSupported`` for ECC on consumer boards, MIG on pre-Ampere GPUs, ...).
Everything here takes the NVML module as an argument, so tests pass a fake
one, and a node can poll the same dict for ``/diagnostics`` (temperature,
power, utilisation, memory, throttle reasons) without the doctor.

Bit values of the clocks-event (throttle) reasons and the enum constants are
those of ``nvml.h`` (NVIDIA Management Library API reference,
"Clocks Event Reasons"; renamed from "Clocks Throttle Reasons" in driver 535).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

#: nvml.h ``nvmlClocksEventReason*`` bits, in bit order.
THROTTLE_REASONS = {
    0x1: 'gpu_idle',
    0x2: 'applications_clocks_setting',
    0x4: 'sw_power_cap',
    0x8: 'hw_slowdown',
    0x10: 'sync_boost',
    0x20: 'sw_thermal_slowdown',
    0x40: 'hw_thermal_slowdown',
    0x80: 'hw_power_brake_slowdown',
    0x100: 'display_clock_setting',
}
NVML_TEMPERATURE_GPU = 0               # nvmlTemperatureSensors_t
NVML_TEMPERATURE_THRESHOLD_SLOWDOWN = 1  # nvmlTemperatureThresholds_t
NVML_MEMORY_ERROR_TYPE_CORRECTED = 0   # nvmlMemoryErrorType_t
NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1
NVML_VOLATILE_ECC = 0                  # nvmlEccCounterType_t (since the last driver load)


def throttle_names(mask: int | None) -> list[str]:
    """Return the names of the clocks-event reason bits set in ``mask`` (bit order)."""
    if mask is None:
        return []
    return [name for bit, name in THROTTLE_REASONS.items() if mask & bit]


@dataclasses.dataclass
class GpuReport:
    """Every GPU's health, or why there is none (``gpus == []`` and ``reason``)."""

    gpus: list[dict[str, Any]]
    driver_version: str | None = None
    cuda_driver_version: int | None = None  # e.g. 12040 for CUDA 12.4
    reason: str = ''


def open_nvml(import_module: Callable[[], Any] | None = None):
    """
    Initialise NVML; return ``(module, '')`` or ``(None, reason)`` without raising.

    ``import_module`` returns the NVML module (default: ``import pynvml``);
    tests pass a fake. The caller shuts NVML down with ``module.nvmlShutdown()``.
    """
    try:
        nvml = import_module() if import_module else __import__('pynvml')
    except ImportError:
        return None, 'nvidia-ml-py (pynvml) is not installed'
    try:
        nvml.nvmlInit()
    except nvml.NVMLError as exc:  # no libnvidia-ml.so, no driver loaded, no device
        return None, f'NVML unavailable: {exc}'
    return nvml, ''


def _get(nvml, fn: str, *args, default=None):
    """Call ``nvml.<fn>(*args)``; ``default`` where the device or library lacks it."""
    call = getattr(nvml, fn, None)
    if call is None:
        return default
    try:
        return call(*args)
    except nvml.NVMLError:  # NotSupported, NoPermission, GpuIsLost, ...
        return default


def _text(value) -> str | None:
    return value.decode() if isinstance(value, bytes) else value


def _throttle_mask(nvml, handle) -> int | None:
    mask = _get(nvml, 'nvmlDeviceGetCurrentClocksEventReasons', handle)
    if mask is None:  # drivers before 535 only have the old name
        mask = _get(nvml, 'nvmlDeviceGetCurrentClocksThrottleReasons', handle)
    return None if mask is None else int(mask)


def _milli(value) -> float | None:
    return None if value is None else value / 1000.0


def read_gpu_health(handle, nvml) -> dict[str, Any]:
    """
    Read one device's health as a flat dict (``None``: not reported by this device).

    Keys: ``name``, ``uuid``; ``temperature_c``, ``temperature_slowdown_c``;
    ``power_w``, ``power_limit_w`` (enforced), ``power_default_limit_w``;
    ``utilization_gpu_pct``, ``utilization_memory_pct``; ``memory_used_bytes``,
    ``memory_total_bytes``; ``throttle_mask`` and ``throttle_reasons`` (names);
    ``pcie_gen``, ``pcie_gen_max``, ``pcie_width``, ``pcie_width_max``;
    ``persistence_mode``; ``ecc_enabled``, ``ecc_pending``,
    ``ecc_corrected_volatile``, ``ecc_uncorrected_volatile``,
    ``remapped_rows_pending``, ``remapping_failed``, ``retired_pages_pending``;
    ``mig_enabled``, ``mig_pending``.
    """
    h = handle
    mem = _get(nvml, 'nvmlDeviceGetMemoryInfo', h)
    util = _get(nvml, 'nvmlDeviceGetUtilizationRates', h)
    mask = _throttle_mask(nvml, h)
    ecc = _get(nvml, 'nvmlDeviceGetEccMode', h)
    ecc_on = None if ecc is None else bool(ecc[0])
    remap = _get(nvml, 'nvmlDeviceGetRemappedRows', h)
    mig = _get(nvml, 'nvmlDeviceGetMigMode', h)
    persistence = _get(nvml, 'nvmlDeviceGetPersistenceMode', h)
    retired = _get(nvml, 'nvmlDeviceGetRetiredPagesPendingStatus', h)

    def ecc_count(kind):
        if not ecc_on:
            return None
        value = _get(nvml, 'nvmlDeviceGetTotalEccErrors', h, kind, NVML_VOLATILE_ECC)
        return None if value is None else int(value)

    return {
        'name': _text(_get(nvml, 'nvmlDeviceGetName', h)),
        'uuid': _text(_get(nvml, 'nvmlDeviceGetUUID', h)),
        'temperature_c': _get(nvml, 'nvmlDeviceGetTemperature', h, NVML_TEMPERATURE_GPU),
        'temperature_slowdown_c': _get(nvml, 'nvmlDeviceGetTemperatureThreshold', h,
                                       NVML_TEMPERATURE_THRESHOLD_SLOWDOWN),
        'power_w': _milli(_get(nvml, 'nvmlDeviceGetPowerUsage', h)),
        'power_limit_w': _milli(_get(nvml, 'nvmlDeviceGetEnforcedPowerLimit', h)),
        'power_default_limit_w': _milli(_get(nvml, 'nvmlDeviceGetPowerManagementDefaultLimit',
                                             h)),
        'utilization_gpu_pct': None if util is None else util.gpu,
        'utilization_memory_pct': None if util is None else util.memory,
        'memory_used_bytes': None if mem is None else int(mem.used),
        'memory_total_bytes': None if mem is None else int(mem.total),
        'throttle_mask': mask,
        'throttle_reasons': throttle_names(mask),
        'pcie_gen': _get(nvml, 'nvmlDeviceGetCurrPcieLinkGeneration', h),
        'pcie_gen_max': _get(nvml, 'nvmlDeviceGetMaxPcieLinkGeneration', h),
        'pcie_width': _get(nvml, 'nvmlDeviceGetCurrPcieLinkWidth', h),
        'pcie_width_max': _get(nvml, 'nvmlDeviceGetMaxPcieLinkWidth', h),
        'persistence_mode': None if persistence is None else bool(persistence),
        'ecc_enabled': ecc_on,
        'ecc_pending': None if ecc is None else bool(ecc[1]),
        'ecc_corrected_volatile': ecc_count(NVML_MEMORY_ERROR_TYPE_CORRECTED),
        'ecc_uncorrected_volatile': ecc_count(NVML_MEMORY_ERROR_TYPE_UNCORRECTED),
        # (corrected rows, uncorrected rows, remapping pending, remapping failed): A100 and later
        'remapped_rows_pending': None if remap is None else bool(remap[2]),
        'remapping_failed': None if remap is None else bool(remap[3]),
        'retired_pages_pending': None if retired is None else bool(retired),
        'mig_enabled': None if mig is None else bool(mig[0]),
        'mig_pending': None if mig is None else bool(mig[1]),
    }


def read_all(nvml) -> GpuReport:
    """Read every device of an initialised NVML module (see ``open_nvml``)."""
    count = _get(nvml, 'nvmlDeviceGetCount', default=0)
    gpus = []
    for i in range(count):
        handle = _get(nvml, 'nvmlDeviceGetHandleByIndex', i)
        if handle is not None:
            gpus.append({'index': i, **read_gpu_health(handle, nvml)})
    return GpuReport(gpus, _text(_get(nvml, 'nvmlSystemGetDriverVersion')),
                     _get(nvml, 'nvmlSystemGetCudaDriverVersion'),
                     '' if gpus else 'NVML reports no device')


def gpu_report(import_module: Callable[[], Any] | None = None) -> GpuReport:
    """Open NVML, read every device, shut NVML down; an empty report says why."""
    nvml, reason = open_nvml(import_module)
    if nvml is None:
        return GpuReport([], reason=reason)
    try:
        return read_all(nvml)
    finally:
        _get(nvml, 'nvmlShutdown')
