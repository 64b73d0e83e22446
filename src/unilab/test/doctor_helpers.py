# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Fabricated /proc + /sys trees and a fake NVML module for the doctor tests."""

import pathlib
import types

#: /proc/interrupts of a 4-CPU robot computer (format of fs/proc/interrupts.c).
INTERRUPTS = """\
            CPU0       CPU1       CPU2       CPU3
   0:         40          0          0          0   IO-APIC   2-edge      timer
  24:       1200          0          0          0  PCI-MSI 524288-edge      enp3s0-TxRx-0
  42:        300          0         17          0  PCI-MSI 1048576-edge      nvidia
  43:     5     0     0     0  PCI-MSI 2048-edge      ehci_hcd:usb1, uhci_hcd:usb2
 LOC:     100000      90000       1000        900   Local timer interrupts
 NMI:          0          0          0          0   Non-maskable interrupts
"""


def write(root: pathlib.Path, rel: str, text: str) -> None:
    """Write ``text`` to ``root/rel``, creating folders."""
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def make_tree(root: pathlib.Path, *, cmdline='BOOT_IMAGE=/vmlinuz ro quiet', realtime=None,
              online='0-3', governors=None, rt=('950000', '1000000'),
              affinity=None, interrupts=INTERRUPTS, cap_eff='0000000000000000',
              comms=(), shm=True) -> pathlib.Path:
    """
    Write a fabricated host under ``root`` and return it.

    ``governors``: ``{cpu: name}``; ``affinity``: ``{irq: cpulist}`` (default every
    IRQ on 0-3); ``comms``: names of running processes; ``rt``: sched_rt runtime and
    period (None leaves them out); ``realtime``: content of /sys/kernel/realtime.
    """
    write(root, 'proc/cmdline', cmdline + '\n')
    if realtime is not None:
        write(root, 'sys/kernel/realtime', realtime)
    write(root, 'sys/devices/system/cpu/online', online + '\n')
    for cpu, gov in (governors or {}).items():
        write(root, f'sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor', gov + '\n')
    if rt is not None:
        write(root, 'proc/sys/kernel/sched_rt_runtime_us', rt[0] + '\n')
        write(root, 'proc/sys/kernel/sched_rt_period_us', rt[1] + '\n')
    write(root, 'proc/interrupts', interrupts)
    for irq, cpus in (affinity or {0: '0-3', 24: '0-3', 42: '0-3', 43: '0-3'}).items():
        write(root, f'proc/irq/{irq}/smp_affinity_list', cpus + '\n')
    write(root, 'proc/self/status', f'Name:\tpython\nCapEff:\t{cap_eff}\n')
    for pid, comm in enumerate(comms, start=100):
        write(root, f'proc/{pid}/comm', comm + '\n')
    if shm:
        (root / 'dev/shm').mkdir(parents=True, exist_ok=True)
    return root


def make_ament_index(root: pathlib.Path, rmws=('rmw_fastrtps_cpp',)) -> str:
    """Create an ament prefix listing ``rmws`` as RMW implementations; return its path."""
    index = root / 'share/ament_index/resource_index/rmw_typesupport'
    index.mkdir(parents=True, exist_ok=True)
    for name in (*rmws, 'rmw_implementation'):
        (index / name).write_text('')
    return str(root)


class FakeNVMLError(Exception):
    """Stands in for pynvml.NVMLError."""


class FakeNvml:
    """
    A fake ``pynvml``: ``gpus`` is a list of ``{nvml function name: answer}`` dicts.

    An answer is returned as is, or called with the arguments after the handle
    when callable; a function missing from the dict raises NVMLError (NotSupported),
    as NVML does for features a device lacks.
    """

    NVMLError = FakeNVMLError

    def __init__(self, gpus, driver='550.54.15', cuda=12040, init_error=None):
        self.gpus, self.driver, self.cuda, self.init_error = gpus, driver, cuda, init_error
        self.shut_down = False

    def nvmlInit(self):
        if self.init_error:
            raise FakeNVMLError(self.init_error)

    def nvmlShutdown(self):
        self.shut_down = True

    def nvmlDeviceGetCount(self):
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index):
        return index

    def nvmlSystemGetDriverVersion(self):
        return self.driver

    def nvmlSystemGetCudaDriverVersion(self):
        return self.cuda

    def __getattr__(self, name):
        if not name.startswith('nvmlDevice'):
            raise AttributeError(name)

        def call(handle, *args):
            answers = self.gpus[handle]
            if name not in answers:
                raise FakeNVMLError('Not Supported')
            value = answers[name]
            return value(*args) if callable(value) else value
        return call


def healthy_gpu(**changes):
    """Return the answers of a healthy data-centre GPU (H200-like), with ``changes``."""
    answers = {
        'nvmlDeviceGetName': 'NVIDIA H200', 'nvmlDeviceGetUUID': 'GPU-0000',
        'nvmlDeviceGetTemperature': lambda sensor: 41,
        'nvmlDeviceGetTemperatureThreshold': lambda kind: 87,
        'nvmlDeviceGetPowerUsage': 120_000, 'nvmlDeviceGetEnforcedPowerLimit': 700_000,
        'nvmlDeviceGetPowerManagementDefaultLimit': 700_000,
        'nvmlDeviceGetUtilizationRates': types.SimpleNamespace(gpu=3, memory=1),
        'nvmlDeviceGetMemoryInfo': types.SimpleNamespace(used=1 << 30, total=141 << 30,
                                                         free=140 << 30),
        'nvmlDeviceGetCurrentClocksEventReasons': 0x1,  # idle
        'nvmlDeviceGetCurrPcieLinkGeneration': 5, 'nvmlDeviceGetMaxPcieLinkGeneration': 5,
        'nvmlDeviceGetCurrPcieLinkWidth': 16, 'nvmlDeviceGetMaxPcieLinkWidth': 16,
        'nvmlDeviceGetPersistenceMode': 1,
        'nvmlDeviceGetEccMode': [1, 1],
        'nvmlDeviceGetTotalEccErrors': lambda kind, counter: 0,
        'nvmlDeviceGetRemappedRows': (0, 0, 0, 0),
        'nvmlDeviceGetRetiredPagesPendingStatus': 0,
        'nvmlDeviceGetMigMode': [0, 0],
    }
    answers.update(changes)
    return answers


def consumer_gpu():
    """Return a consumer board's answers: no ECC, no MIG, no row remapping."""
    answers = healthy_gpu(nvmlDeviceGetName='NVIDIA GeForce RTX 4090')
    for key in ('nvmlDeviceGetEccMode', 'nvmlDeviceGetTotalEccErrors',
                'nvmlDeviceGetRemappedRows', 'nvmlDeviceGetRetiredPagesPendingStatus',
                'nvmlDeviceGetMigMode'):
        del answers[key]
    return answers
