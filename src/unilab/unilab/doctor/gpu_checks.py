# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The doctor's GPU checks: pure functions over ``gpu_health.read_gpu_health`` dicts.

A value of ``None`` means the device does not report it (ECC on a consumer
board, MIG before Ampere, ...): such a check is ``ok`` and says so. Names are
``gpu<index>/<check>`` so several GPUs stay apart.
"""

from __future__ import annotations

from typing import Any

from unilab.doctor.checks import Check, FAIL, OK, WARN
from unilab_core.gpu_health import GpuReport

#: Clocks-event reasons by severity. Hardware slowdown (thermal, power brake, HW signal)
#: halves clocks or worse: GPU latency jumps. Software caps trim clocks. The rest
#: (idle, application clocks, sync boost, display) are normal operation.
HW_REASONS = ('hw_slowdown', 'hw_thermal_slowdown', 'hw_power_brake_slowdown')
SW_REASONS = ('sw_thermal_slowdown', 'sw_power_cap')
#: Used when the device has no slowdown threshold to report.
FALLBACK_SLOWDOWN_C = 90
TEMPERATURE_MARGIN_C = 5
MEMORY_USED_WARN = 0.5
GIB = 1 << 30

GPU_CHECKS = ('persistence', 'pcie_link', 'throttle', 'ecc', 'mig', 'temperature', 'power',
              'memory')


def _name(g: dict, check: str) -> str:
    return f'gpu{g.get("index", 0)}/{check}'


def check_nvml(report: GpuReport, requested: str) -> Check:
    """Check that NVML sees the GPUs (the other GPU checks need it)."""
    if report.gpus:
        names = ', '.join(sorted({g.get('name') or '?' for g in report.gpus}))
        return Check('nvml', OK, f'{len(report.gpus)} GPU(s): {names}; driver '
                     f'{report.driver_version}')
    if requested.startswith('cuda'):
        return Check('nvml', WARN, f'no GPU health: {report.reason}',
                     'install nvidia-ml-py and the NVIDIA driver (libnvidia-ml.so)')
    return Check('nvml', OK, f'no GPU ({report.reason}); run.device {requested}')


def check_persistence(g: dict[str, Any]) -> Check:
    """Check persistence mode, which keeps the driver loaded between processes."""
    pm = g.get('persistence_mode')
    if pm is None:
        return Check(_name(g, 'persistence'), OK, 'not reported')
    if pm:
        return Check(_name(g, 'persistence'), OK, 'persistence mode on')
    return Check(_name(g, 'persistence'), WARN,
                 'persistence mode off: the driver tears the GPU down when the last process '
                 'exits, so every start pays the initialisation again',
                 '`nvidia-smi -pm 1` or enable nvidia-persistenced')


def check_pcie_link(g: dict[str, Any]) -> Check:
    """Check the PCIe link: full width; a lower generation only while idle."""
    name = _name(g, 'pcie_link')
    gen, gen_max = g.get('pcie_gen'), g.get('pcie_gen_max')
    width, width_max = g.get('pcie_width'), g.get('pcie_width_max')
    if None in (gen, gen_max, width, width_max):
        return Check(name, OK, 'link not reported')
    text = f'Gen{gen} x{width} (max Gen{gen_max} x{width_max})'
    if width < width_max:
        return Check(name, WARN, text + f': trained at {width} of {width_max} lanes, '
                     'host-device copies run at a fraction of the bandwidth',
                     'reseat the card or move it to a full-width slot; check the BIOS lane '
                     'split (bifurcation) and riser')
    if gen < gen_max:
        if 'gpu_idle' in g.get('throttle_reasons', []):
            return Check(name, OK, text + ' (idle: the link downshifts to save power)')
        return Check(name, WARN, text + ': generation below max while busy',
                     'check the BIOS PCIe speed setting and the riser/cable; '
                     '`nvidia-smi -q -d PCIE` under load')
    return Check(name, OK, text)


def check_throttle(g: dict[str, Any]) -> Check:
    """Check the clocks-event (throttle) reasons now active."""
    name = _name(g, 'throttle')
    reasons = g.get('throttle_reasons', [])
    if g.get('throttle_mask') is None:
        return Check(name, OK, 'not reported')
    hw = [r for r in reasons if r in HW_REASONS]
    sw = [r for r in reasons if r in SW_REASONS]
    text = ', '.join(reasons) or 'none'
    if hw:
        return Check(name, FAIL, f'clocks slowed by hardware: {text}',
                     'check cooling (fans, airflow, inlet temperature) and the power supply '
                     '/ cables; `nvidia-smi -q -d PERFORMANCE`')
    if sw:
        return Check(name, WARN, f'clocks capped by the driver: {text}',
                     'raise the power limit (`nvidia-smi -pl`) or improve cooling')
    return Check(name, OK, f'reasons: {text}')


def check_ecc(g: dict[str, Any]) -> Check:
    """Check ECC: on, no uncorrected errors, no pending row remapping or page retirement."""
    name = _name(g, 'ecc')
    on = g.get('ecc_enabled')
    if on is None:
        return Check(name, OK, 'ECC not supported')
    if not on:
        pending = ' (enabled after the next reset)' if g.get('ecc_pending') else ''
        return Check(name, WARN, 'ECC off' + pending + ': memory bit flips go unnoticed',
                     '`nvidia-smi -e 1`, then reset the GPU or reboot')
    unc = g.get('ecc_uncorrected_volatile') or 0
    corr = g.get('ecc_corrected_volatile') or 0
    text = f'ECC on; since driver load {unc} uncorrected, {corr} corrected errors'
    if g.get('remapping_failed'):
        return Check(name, FAIL, text + '; row remapping FAILED',
                     'the board needs service (RMA); take it out of use')
    if unc or g.get('remapped_rows_pending') or g.get('retired_pages_pending'):
        return Check(name, FAIL, text + '; rows/pages wait for a GPU reset to be retired',
                     'drain the GPU and reset it (`nvidia-smi -r`) or reboot; if errors '
                     'return, the board needs service')
    if corr:
        return Check(name, WARN, text, 'watch the count; rising corrected errors precede '
                     'uncorrected ones')
    return Check(name, OK, text)


def check_mig(g: dict[str, Any]) -> Check:
    """Check Multi-Instance GPU mode: CUDA IPC does not cross MIG instances."""
    name = _name(g, 'mig')
    on = g.get('mig_enabled')
    if on is None:
        return Check(name, OK, 'MIG not supported')
    pending = g.get('mig_pending')
    if pending is not None and pending != on:
        return Check(name, WARN, f'MIG {"on" if on else "off"}, change to '
                     f'{"on" if pending else "off"} pending a GPU reset',
                     'reset the GPU (`nvidia-smi -r`) to apply the pending mode')
    if on:
        return Check(name, WARN, 'MIG on: each process sees one instance, and CUDA IPC '
                     '(the GPU transport between nodes) works only within one instance',
                     'run the whole graph on one MIG instance (CUDA_VISIBLE_DEVICES=MIG-<uuid>)'
                     ' or disable MIG: `nvidia-smi -mig 0`')
    return Check(name, OK, 'MIG off')


def check_temperature(g: dict[str, Any]) -> Check:
    """Check the temperature against the device's slowdown threshold."""
    name = _name(g, 'temperature')
    t = g.get('temperature_c')
    if t is None:
        return Check(name, OK, 'not reported')
    limit = g.get('temperature_slowdown_c') or FALLBACK_SLOWDOWN_C
    text = f'{t} C (slowdown at {limit} C)'
    if t >= limit:
        return Check(name, FAIL, text + ': clocks are being cut',
                     'improve cooling: fans, airflow, inlet temperature, dust')
    if t >= limit - TEMPERATURE_MARGIN_C:
        return Check(name, WARN, text + f': within {TEMPERATURE_MARGIN_C} C of slowdown',
                     'improve cooling before long runs')
    return Check(name, OK, text)


def check_power(g: dict[str, Any]) -> Check:
    """Check the power draw, and the enforced limit against the board default."""
    name = _name(g, 'power')
    limit, default = g.get('power_limit_w'), g.get('power_default_limit_w')
    draw = g.get('power_w')
    if limit is None:
        return Check(name, OK, 'not reported')
    text = f'{draw:.0f} W of {limit:.0f} W limit' if draw is not None else f'limit {limit:.0f} W'
    if default and limit < default:
        return Check(name, WARN, text + f', below the default {default:.0f} W: clocks drop '
                     'under load', f'`nvidia-smi -pl {default:.0f}`')
    return Check(name, OK, text)


def check_memory(g: dict[str, Any]) -> Check:
    """Check device memory already held by other processes before the graph starts."""
    name = _name(g, 'memory')
    used, total = g.get('memory_used_bytes'), g.get('memory_total_bytes')
    if used is None or not total:
        return Check(name, OK, 'not reported')
    text = f'{used / GIB:.1f} of {total / GIB:.1f} GiB used'
    if used > MEMORY_USED_WARN * total:
        return Check(name, WARN, text + ': other processes hold device memory '
                     '(gpu.memory_pool_ratio reserves a share of what is free)',
                     'stop the other processes (`nvidia-smi` lists them) or lower '
                     'gpu.memory_pool_ratio')
    return Check(name, OK, text)


def gpu_checks(g: dict[str, Any]) -> list[Check]:
    """Return every per-GPU check for one ``read_gpu_health`` dict (``GPU_CHECKS`` order)."""
    return [check_persistence(g), check_pcie_link(g), check_throttle(g), check_ecc(g),
            check_mig(g), check_temperature(g), check_power(g), check_memory(g)]
