# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The shipped Fast DDS profile keeps DDS off /dev/shm; without it Fast DDS leaves 0644 files.

Two processes talk over a topic; each lists the /dev/shm files it has mapped
or open. With ``config/fastdds_private.xml`` the message arrives and no
``fastdds_*`` file is used; with Fast DDS's defaults the same run maps
``fastdds_*`` segments of mode 0644 (what docs/dds.md explains). The
``bin/unilab`` wrapper's ``UNILAB_DDS_PRIVATE=1`` sets the same environment.
"""

import json
import os
import pathlib
import subprocess
import sys
import textwrap

from unilab_bringup.paths import config_dir

CHILD = textwrap.dedent('''
    import json, os, stat, sys, time
    import rclpy
    from std_msgs.msg import String
    role, topic = sys.argv[1], sys.argv[2]
    rclpy.init()
    node = rclpy.create_node(f'dds_probe_{role}')
    got = []
    if role == 'talker':
        pub = node.create_publisher(String, topic, 10)
        deadline = time.monotonic() + 20
        while pub.get_subscription_count() == 0 and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.05)
        for _ in range(40):
            pub.publish(String(data='hello'))
            rclpy.spin_once(node, timeout_sec=0.05)
    else:
        node.create_subscription(String, topic, lambda m: got.append(m.data), 10)
        deadline = time.monotonic() + 20
        while not got and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.05)
    files = {}
    for line in open(f'/proc/{os.getpid()}/maps'):
        parts = line.split()
        if len(parts) >= 6 and parts[5].startswith('/dev/shm/'):
            files[parts[5]] = None
    for fd in os.listdir('/proc/self/fd'):
        try:
            target = os.readlink(f'/proc/self/fd/{fd}')
        except OSError:
            continue
        if target.startswith('/dev/shm/'):
            files[target] = None
    for f in files:
        try:
            files[f] = oct(stat.S_IMODE(os.stat(f).st_mode))
        except OSError:
            pass
    print(json.dumps({'received': bool(got), 'shm': files}), flush=True)
    node.destroy_node()
    rclpy.shutdown()
''')


def _talk(tmp_path, env_extra):
    env = dict(os.environ, **env_extra)
    for key in ('FASTDDS_DEFAULT_PROFILES_FILE', 'FASTRTPS_DEFAULT_PROFILES_FILE',
                'FASTDDS_BUILTIN_TRANSPORTS'):
        if key not in env_extra:
            env.pop(key, None)
    topic = f'/dds_probe_{tmp_path.name}'
    procs = [subprocess.Popen([sys.executable, '-c', CHILD, role, topic], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for role in ('listener', 'talker')]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=60)
        assert p.returncode == 0, stderr
        out.append(json.loads(stdout.strip().splitlines()[-1]))
    return out


def _fastdds(files):
    return {f: m for f, m in files.items() if os.path.basename(f).startswith('fastdds')}


def test_the_private_profile_keeps_dds_off_shared_memory(tmp_path):
    profile = config_dir() / 'fastdds_private.xml'
    assert profile.is_file()
    # SYSTEM_DEFAULT: with LOCALHOST, rmw_fastrtps installs its own transports (shm included).
    listener, talker = _talk(tmp_path, {'FASTDDS_DEFAULT_PROFILES_FILE': str(profile),
                                        'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SYSTEM_DEFAULT'})
    assert listener['received']
    assert _fastdds(listener['shm']) == {} and _fastdds(talker['shm']) == {}


def test_fast_dds_defaults_use_world_readable_shared_memory(tmp_path):
    listener, talker = _talk(tmp_path, {})
    assert listener['received']
    used = {**_fastdds(listener['shm']), **_fastdds(talker['shm'])}
    assert used, 'Fast DDS defaults no longer use shared memory: update docs/dds.md'
    assert set(used.values()) <= {'0o644', None}, used  # None: removed before stat


def _repo_root() -> pathlib.Path:
    """Return the checkout holding this test (the bin/unilab wrapper's ROOT)."""
    here = pathlib.Path(__file__).resolve()
    return next(p for p in here.parents if (p / 'scripts' / 'dds_env.sh').is_file())


def _wrapper_env(**env):
    """Return the DDS variables bin/unilab exports for the environment ``env``."""
    root = _repo_root()
    script = root / 'scripts' / 'dds_env.sh'
    base = {k: v for k, v in os.environ.items()
            if k not in ('ROS_AUTOMATIC_DISCOVERY_RANGE', 'FASTDDS_DEFAULT_PROFILES_FILE',
                         'UNILAB_DDS_PRIVATE')}
    out = subprocess.run(
        ['bash', '-c', f'ROOT={root}; source {script}; echo "$ROS_AUTOMATIC_DISCOVERY_RANGE"; '
                       'echo "${FASTDDS_DEFAULT_PROFILES_FILE:-}"'],
        env={**base, **env}, capture_output=True, text=True, check=True).stdout.splitlines()
    return out[0], out[1]


def test_every_process_started_through_unilab_keeps_dds_private_by_default():
    profile = str(_repo_root() / 'config' / 'fastdds_private.xml')
    assert _wrapper_env() == ('SYSTEM_DEFAULT', profile)
    # Opted out: Fast DDS's own transports, discovery on this machine.
    assert _wrapper_env(UNILAB_DDS_PRIVATE='0') == ('LOCALHOST', '')
    # A user's own choice is kept.
    assert _wrapper_env(ROS_AUTOMATIC_DISCOVERY_RANGE='SUBNET') == ('SUBNET', '')
    assert _wrapper_env(FASTDDS_DEFAULT_PROFILES_FILE='/etc/mine.xml') == (
        'LOCALHOST', '/etc/mine.xml')
