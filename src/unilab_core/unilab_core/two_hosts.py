# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Two "hosts" on one machine, for tests: namespaces with their own /dev/shm and a veth pair.

Each host is a process started in new network, mount and IPC namespaces with a tmpfs
``/dev/shm`` of its own (so no shared memory crosses), holding only ``lo`` and its end
of a veth pair; Fast DDS talks UDPv4 only, discovering the peer by unicast. Needs root
(``unavailable()`` says why not, for a clean skip).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

from unilab_core.transport import shm

#: UDPv4 only (no Fast DDS shared memory: the two "hosts" have separate /dev/shm), discovery
#: by unicast to the peer's address and to this host's other processes (127.0.0.1). (An
#: interface allowlist, as docs/dds.md shows for real hosts, made discovery fail between
#: two namespaces of one machine: not used here.)
FASTDDS_XML = '''<?xml version="1.0" encoding="UTF-8" ?>
<dds xmlns="http://www.eprosima.com">
  <profiles>
    <transport_descriptors>
      <transport_descriptor>
        <transport_id>veth_udp</transport_id>
        <type>UDPv4</type>
      </transport_descriptor>
    </transport_descriptors>
    <participant profile_name="hosts" is_default_profile="true">
      <rtps>
        <userTransports><transport_id>veth_udp</transport_id></userTransports>
        <useBuiltinTransports>false</useBuiltinTransports>
        <builtin>
          <initialPeersList>
            <locator><udpv4><address>{peer}</address></udpv4></locator>
            <locator><udpv4><address>127.0.0.1</address></udpv4></locator>
          </initialPeersList>
        </builtin>
      </rtps>
    </participant>
  </profiles>
</dds>
'''


def unavailable() -> str:
    """Return why two hosts cannot be made here ('' when they can)."""
    if os.geteuid() != 0:
        return 'needs root (network, mount and IPC namespaces, a veth pair)'
    for tool in ('unshare', 'ip', 'nsenter', 'mount'):
        if shutil.which(tool) is None:
            return f'`{tool}` is not installed'
    probe = subprocess.run(
        ['unshare', '--net', '--mount', '--ipc', 'sh', '-c',
         'mount -t tmpfs tmpfs /dev/shm && ip link set lo up'],
        capture_output=True, text=True)
    if probe.returncode != 0:
        return f'namespaces not permitted here: {probe.stderr.strip()[:200]}'
    return ''


def addresses(roles=('a', 'b')) -> dict[str, str]:
    """Return an address per role in a /30 nothing routes here (from the pid: runs differ)."""
    net = f'10.{200 + os.getpid() % 50}.{os.getpid() % 250}'
    return {role: f'{net}.{k + 1}' for k, role in enumerate(roles)}


def host_env(tmp: str, role: str, peer_address: str, **extra) -> dict:
    """Return the environment of one host: its Fast DDS profile, discovery beyond localhost."""
    xml = os.path.join(tmp, f'{role}.xml')
    with open(xml, 'w') as f:
        f.write(FASTDDS_XML.format(peer=peer_address))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path),
               FASTDDS_DEFAULT_PROFILES_FILE=xml,
               ROS_AUTOMATIC_DISCOVERY_RANGE='SYSTEM_DEFAULT', **extra)
    env.pop(shm.HOST_ID_ENV, None)
    env.pop('ROS_LOCALHOST_ONLY', None)
    return env


def start(args: list[str], env: dict, **popen) -> subprocess.Popen:
    """Start ``args`` in new network, mount and IPC namespaces with a /dev/shm of its own."""
    script = 'mount -t tmpfs -o mode=1777 tmpfs /dev/shm && exec "$@"'
    popen.setdefault('stdin', subprocess.PIPE)
    popen.setdefault('stdout', subprocess.PIPE)
    popen.setdefault('stderr', subprocess.STDOUT)
    popen.setdefault('start_new_session', True)  # ``stop`` ends the host and its children
    return subprocess.Popen(['unshare', '--net', '--mount', '--ipc', 'sh', '-c', script, 'sh']
                            + args, text=True, env=env, **popen)


def stop(proc: subprocess.Popen) -> None:
    """Kill a host and every process it started (its process group)."""
    import signal
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait(10)


def ip(*args, pid: int | None = None) -> None:
    """Run ``ip ARGS`` here or in the network namespace of ``pid``."""
    cmd = (['nsenter', '-t', str(pid), '-n'] if pid else []) + ['ip', *args]
    subprocess.run(cmd, check=True, capture_output=True, text=True)


def link(procs: dict[str, subprocess.Popen], addrs: dict[str, str]) -> str:
    """Join two hosts' namespaces by a veth pair with ``addrs``; return one end's name."""
    (ra, pa), (rb, pb) = procs.items()
    suffix = f'{os.getpid() % 10000}'
    veth = (f'ula{suffix}', f'ulb{suffix}')
    ip('link', 'add', veth[0], 'type', 'veth', 'peer', 'name', veth[1])
    for dev, proc, role in ((veth[0], pa, ra), (veth[1], pb, rb)):
        ip('link', 'set', dev, 'netns', str(proc.pid))
        ip('addr', 'add', f'{addrs[role]}/30', 'dev', dev, pid=proc.pid)
        ip('link', 'set', dev, 'up', pid=proc.pid)
        ip('link', 'set', 'lo', 'up', pid=proc.pid)
    return veth[0]


def unlink(veth: str) -> None:
    """Delete the veth pair (gone already when a namespace ended)."""
    subprocess.run(['ip', 'link', 'del', veth], capture_output=True)


def result(proc: subprocess.Popen, timeout: float = 90.0) -> dict:
    """Read a child's output to its end (killed after ``timeout``); return its result line."""
    import json
    import threading
    watchdog = threading.Timer(timeout, proc.kill)
    watchdog.start()
    try:
        out = proc.stdout.read()
        proc.wait()
    finally:
        watchdog.cancel()
    for line in out.splitlines():
        if line.startswith('result '):
            return json.loads(line.split(' ', 1)[1])
    raise AssertionError(f'no result from child (rc {proc.returncode}):\n{out[-3000:]}')
