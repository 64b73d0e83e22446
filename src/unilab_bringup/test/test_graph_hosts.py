# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A training graph split across two hosts: the trainer on one, the control loop on the other.

The hosts are network, mount and IPC namespaces of this machine, each with its own
``/dev/shm``, joined by a veth pair with DDS over UDP (``unilab_core.two_hosts``; needs
root, skipped with the reason otherwise). Each host starts its nodes exactly as
``bin/unilab train --multiprocess`` does (``runner.node_command``, one parameter file), so
the rollout (policy -> trainer) and the latched weights (trainer -> policy) cross hosts
as serialised messages instead of shared memory.
"""

import json
import shutil
import sys
import tempfile

import pytest
from unilab_bringup.prepare import prepare_run
from unilab_bringup.runner import node_command
from unilab_core import two_hosts

#: One host's launcher: after `go` start every node (output to its log), then wait until
#: every node exited or `stop` arrives; SIGINT the rest; print their exit codes.
HOST = r'''
import json, signal, subprocess, sys, threading, time
nodes = json.loads(sys.argv[1])
sys.stdin.readline()
procs = {n: subprocess.Popen(cmd, stdout=open(log, 'w'), stderr=subprocess.STDOUT)
         for n, cmd, log in nodes}
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
while not stop.is_set() and any(p.poll() is None for p in procs.values()):
    time.sleep(0.2)
for p in procs.values():
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
for p in procs.values():
    try:
        p.wait(15)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
print('result', json.dumps({n: p.returncode for n, p in procs.items()}), flush=True)
'''

ENVS, STEPS_PER_UPDATE, UPDATES = 4, 4 * 32, 2


def test_trainer_on_one_host_control_loop_on_another_train_over_dds():
    why = two_hosts.unavailable()
    if why:
        pytest.skip(f'two hosts on one machine: {why}')
    tmp = tempfile.mkdtemp(prefix='unilab_graph_hosts_')
    run = prepare_run([], {'rollout.num_envs': ENVS,
                           'run.total_steps': UPDATES * STEPS_PER_UPDATE,
                           'run.process_mode': 'multiprocess', 'logging.tensorboard': False,
                           'logging.progress': False, 'model.hidden_sizes': [32, 32]},
                      run_dir=f'{tmp}/run')
    logs = run.run_dir / 'logs'
    logs.mkdir()
    placement = {'gpu': ['trainer'], 'sim': [s.name for s in run.graph.nodes
                                             if s.name != 'trainer']}
    assert set(placement['sim']) >= {'bridge', 'perception', 'policy', 'safety'}
    specs = {s.name: s for s in run.graph.nodes}
    addr = two_hosts.addresses(('gpu', 'sim'))
    hosts, veth = {}, ''
    try:
        for role, peer in (('gpu', 'sim'), ('sim', 'gpu')):
            nodes = [(n, node_command(specs[n], run.params_file, run.graph),
                      str(logs / f'{n}.log')) for n in placement[role]]
            hosts[role] = two_hosts.start([sys.executable, '-c', HOST, json.dumps(nodes)],
                                          two_hosts.host_env(tmp, role, addr[peer]))
        veth = two_hosts.link(hosts, addr)
        for proc in hosts.values():
            proc.stdin.write('go\n')
            proc.stdin.flush()
        gpu = two_hosts.result(hosts['gpu'], 240)  # the trainer ends when the step budget is used
        hosts['sim'].stdin.write('stop\n')
        hosts['sim'].stdin.flush()
        sim = two_hosts.result(hosts['sim'], 60)
    finally:
        for proc in hosts.values():
            two_hosts.stop(proc)
        if veth:
            two_hosts.unlink(veth)
    text = {n: (logs / f'{n}.log').read_text() for n in specs}
    assert gpu == {'trainer': 0}, text['trainer'][-3000:]
    assert all(rc in (0, -2) for rc in sim.values()), (sim, text['policy'][-2000:])
    summary = json.loads((run.run_dir / 'summary.json').read_text())
    assert summary['steps'] == UPDATES * STEPS_PER_UPDATE and summary['updates'] == UPDATES
    assert (run.run_dir / 'checkpoints' / 'latest.pt').is_file()
    # Neither side could map the other's shared memory; both said so and were served the
    # serialised messages: the rollout chunks (trainer) and the latched weights (policy).
    assert '/unilab/rollout: the writer of' in text['trainer'], text['trainer'][-2000:]
    assert 'cannot share memory with this process' in text['policy'], text['policy'][-2000:]
    shutil.rmtree(tmp, ignore_errors=True)
