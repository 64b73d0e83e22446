# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Adaptation rounds: deploy, reject, roll back after three drops, resume from disk."""

import json

import numpy as np
import pytest
from test_adapt_finetune import _bundle, robot_chunk
from unilab_adapt.adapter import Adapter, RoundStopped
from unilab_adapt.params import AdaptSection
from unilab_core.config import AdvantageSection, PolicyUpdateSection
from unilab_policy.weights import flatten_state

EPISODE = 10


def episodes_chunk(final_distances):
    """Return a chunk of whole episodes ending at the given distances (goal changes between)."""
    d, ends = [], []
    for final in final_distances:
        d += list(np.linspace(0.3, final, EPISODE))
        ends.append(len(d) - 1)
    d.append(0.3)
    return robot_chunk(d, goal_changes=ends)


def make_adapter(tmp_path, sim=lambda flat: 0.9, pause=None, **cfg):
    bundle = _bundle()
    flat0 = flatten_state(bundle)[0].numpy()
    cfg = AdaptSection(min_episodes=4, batch_size=16, **cfg)
    return Adapter(tmp_path, bundle, flat0, cfg, AdvantageSection(), PolicyUpdateSection(),
                   sim, log=lambda *_: None, pause=pause)


def feed(adapter, message_version, finals):
    # a leading partial episode (the one a swap cuts) is never scored
    adapter.add_chunk(episodes_chunk([0.3] + list(finals)), message_version)


def test_a_round_waits_for_episodes_then_deploys_a_fine_tuned_version(tmp_path):
    a = make_adapter(tmp_path)
    feed(a, 0, [0.01, 0.01])
    r = a.step()
    assert r.kind == 'wait' and '2 of 4' in r.reason
    # The deployed policy's simulation test runs with the first round, on the round's
    # thread, not while the adapter (its node) is being made.
    assert a.fuse.versions[0].sim_success is None
    feed(a, 0, [0.01, 0.01, 0.2, 0.01])
    r = a.step()
    assert a.fuse.versions[0].sim_success == pytest.approx(0.9)
    assert r.kind == 'deployed' and r.publish is not None
    msg, version, flat = r.publish
    assert (msg, version) == (1, 1) and a.fuse.running == 1
    np.testing.assert_array_equal(flat, a.load_weights(1))
    # 7 complete episodes (the second chunk completes the first one's partial start)
    assert a.fuse.versions[0].robot_success == pytest.approx(5 / 7)
    deployments = json.loads((tmp_path / 'adapt' / 'deployments.json').read_text())
    assert deployments == {'0': 0, '1': 1}
    kinds = [json.loads(line)['kind'] for line in open(tmp_path / 'adapt' / 'history.jsonl')]
    assert kinds == ['start', 'robot', 'candidate']


def test_a_candidate_worse_in_simulation_is_never_deployed(tmp_path):
    scores = iter([0.9, 0.5])
    a = make_adapter(tmp_path, sim=lambda flat: next(scores))
    feed(a, 0, [0.01] * 4)
    r = a.step()
    assert r.kind == 'rejected' and r.publish is None and a.fuse.running == 0
    assert a.fuse.versions[1].status == 'rejected'
    assert a.weights_file(1).is_file()  # kept for the operator


def test_three_drops_in_a_row_roll_back_to_the_last_good_version_and_alert(tmp_path):
    a = make_adapter(tmp_path)
    feed(a, 0, [0.01] * 4)                      # version 0: success 1.0 on the robot
    assert a.step().kind == 'deployed'
    results = []
    for msg in (1, 2, 3):                       # versions 1-3 fail on the robot
        feed(a, msg, [0.3] * 4)
        results.append(a.step())
    assert [r.kind for r in results] == ['deployed', 'deployed', 'rollback']
    r = results[-1]
    assert r.alert and 'rolled back to version 0' in r.reason
    msg, version, flat = r.publish
    assert version == 0 and msg == 4            # a new message carries the old weights
    np.testing.assert_array_equal(flat, a.load_weights(0))
    assert a.fuse.rollbacks == 1 and a.fuse.running == 0
    assert {a.fuse.versions[v].status for v in (1, 2, 3)} == {'rolled_back'}
    # Chunks tagged with message 4 are version 0's again; the fuse holds adaptation there
    # (no fine-tuning) until an operator resumes it.
    feed(a, 4, [0.01] * 4)
    assert a.step().kind == 'held'
    assert a.fuse.versions[0].robot_episodes == 8
    a.resume()
    feed(a, 4, [0.01] * 4)
    assert a.step().kind == 'deployed' and a.fuse.running == 4


def test_a_restarted_adapter_resumes_versions_and_deployments_from_disk(tmp_path):
    a = make_adapter(tmp_path)
    feed(a, 0, [0.01] * 4)
    a.step()
    b = make_adapter(tmp_path, sim=lambda flat: pytest.fail('no new simulation test'))
    assert b.fuse.running == 1 and b.deployments == {0: 0, 1: 1}
    again = b.republish_running()
    assert again[0] == 2 and again[1] == 1      # the running version, under a new message
    np.testing.assert_array_equal(again[2], a.load_weights(1))


def test_a_restarted_adapter_removes_the_temp_files_a_killed_write_left(tmp_path):
    """A kill -9 mid-write leaves ``.fuse.json.<random>.tmp``: the next start removes it."""
    a = make_adapter(tmp_path)
    feed(a, 0, [0.01] * 4)
    a.step()
    left = [a.dir / '.fuse.json.k1ll3d.tmp', a.dir / 'versions' / '.v0002.npy.k1ll3d.tmp']
    for f in left:
        f.write_text('half')
    said = []
    bundle = _bundle()
    b = Adapter(tmp_path, bundle, flatten_state(bundle)[0].numpy(),
                AdaptSection(min_episodes=4, batch_size=16), AdvantageSection(),
                PolicyUpdateSection(), lambda flat: 0.9, log=said.append)
    assert not any(f.exists() for f in left)
    assert sum('killed adapter' in line for line in said) == 2, said
    assert b.fuse.running == 1  # the real state, written whole, is what it resumes from


def test_a_chunk_of_another_width_is_refused_counted_and_changes_nothing(tmp_path):
    from unilab_adapt.finetune import AdaptDataError
    a = make_adapter(tmp_path)
    wide = episodes_chunk([0.01] * 4)
    wide['obs'] = np.concatenate([wide['obs'], wide['obs'][..., :2]], axis=-1)
    wide['next_obs'] = np.concatenate([wide['next_obs'], wide['next_obs'][:, :2]], axis=-1)
    with pytest.raises(AdaptDataError, match='observation'):
        a.add_chunk(wide, 0)
    ragged = episodes_chunk([0.01] * 4)
    ragged['next_obs'] = ragged['next_obs'][:, :3]
    with pytest.raises(AdaptDataError, match='shape'):
        a.add_chunk(ragged, 0)
    assert a.bad_chunks == 2 and a.window.size == 0
    # the scored window restarts, but the count of what it dropped is kept
    a.window.dropped_steps = 7
    feed(a, 0, [0.01] * 4)
    a.step()
    assert a.window.size == 0 and a.window.dropped_steps == 7


def test_sched_idle_moves_the_threads_started_before_and_after_it():
    # In a child: a thread cannot leave SCHED_IDLE without privileges. The thread started
    # before plays rclpy's DDS threads (they exist before a node can ask).
    import subprocess
    import sys
    code = ('import os, threading\n'
            'from unilab_core.ros.runtime import sched_idle\n'
            'go = threading.Event(); before = []\n'
            'def waiting():\n'
            '    go.wait(); before.append(os.sched_getscheduler(0))\n'
            'w = threading.Thread(target=waiting); w.start()\n'
            'said = sched_idle()\n'
            'go.set(); w.join()\n'
            'got = []\n'
            't = threading.Thread(target=lambda: got.append(os.sched_getscheduler(0)))\n'
            't.start(); t.join()\n'
            'every = all(os.sched_getscheduler(int(t)) == os.SCHED_IDLE\n'
            '            for t in os.listdir(\'/proc/self/task\'))\n'
            'print(said.split()[0], before[0] == os.SCHED_IDLE, got[0] == os.SCHED_IDLE,\n'
            '      every)\n')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ['SCHED_IDLE', 'True', 'True', 'True']


def test_a_restarted_adapter_rebuilds_its_window_from_the_closed_recorded_bags(tmp_path):
    from unilab_bag.testing import tensor_batch_bytes, TB
    from unilab_adapt.params import RECORDINGS
    from unilab_bag.rotating import RotatingBagWriter
    from unilab_core import topics
    a = make_adapter(tmp_path)
    size = len(tensor_batch_bytes('rollout', 0, episodes_chunk([0.3] * 4), version=0))
    # A new bag after every second chunk: the first bag holds chunks 0 and 1.
    rec = RotatingBagWriter(tmp_path / RECORDINGS, rotate_bytes=2 * size - 1,
                            keep_bytes=1 << 30)
    rec.add_topic(topics.ROLLOUT, TB)

    def record(seq, t_ns, finals):
        chunk = episodes_chunk([0.3] + list(finals))
        rec.write(topics.ROLLOUT, t_ns, tensor_batch_bytes('rollout', seq, chunk, version=0))
        feed(a, 0, finals)  # the live adapter gets the same chunk

    # Round one scores four episodes; what it took in was recorded before t = 1000 ns.
    record(0, 100, [0.01] * 4)
    assert a.step(taken_ns=1000).kind == 'deployed'
    # Then three more episodes of version 0 (message 0) arrive and the adapter dies.
    record(1, 2000, [0.3] * 3)
    record(2, 3000, [0.3] * 3)  # into the second bag, still open
    live = a.window.size
    b = make_adapter(tmp_path, sim=lambda flat: pytest.fail('no new simulation test'))
    got = b.replay_recordings(tmp_path / RECORDINGS, topics.ROLLOUT)
    # Of the closed bag only the chunk after the scored round comes back (chunk 0 was
    # scored); the bag still being written is not read, and is counted.
    assert got['chunks'] == 1 and got['open_bags'] == 1 and got['bad_chunks'] == 0
    assert got['bags'] == 1 and b.window.size == live // 2
    rec.close()
    c = make_adapter(tmp_path, sim=lambda flat: pytest.fail('no new simulation test'))
    got = c.replay_recordings(tmp_path / RECORDINGS, topics.ROLLOUT)
    assert got['chunks'] == 2 and got['open_bags'] == 0 and got['bags'] == 2
    assert c.window.size == live
    # Nothing scored twice: version 0's six new episodes (3 + 3, each chunk's leading
    # partial one cut) are all the window holds.
    steps = c.window.steps()
    assert set(steps.version.tolist()) == {0} and c.running_episodes() == 0
    assert json.loads((tmp_path / 'adapt' / 'window.json').read_text()) == {'consumed_ns': 1000}


@pytest.mark.parametrize('text', ['{', '{"other": 1}', '{"consumed_ns": -5}', '[1]'])
def test_a_damaged_window_state_is_refused_naming_the_file(tmp_path, text):
    make_adapter(tmp_path)
    (tmp_path / 'adapt' / 'window.json').write_text(text)
    with pytest.raises(ValueError, match='window.json'):
        make_adapter(tmp_path)


@pytest.mark.parametrize('where', ['fine-tuning', 'simulation test'])
def test_a_round_stopped_at_a_pause_proposes_nothing_and_the_next_round_does(tmp_path, where):
    # The node, closing, raises RoundStopped from its pause (every minibatch, every
    # simulation step): the round ends there.
    closing = {'on': False}

    def pause():
        if closing['on']:
            raise RoundStopped('closing')

    def sim(flat):
        if where == 'simulation test' and a.fuse.versions[0].sim_success is not None:
            closing['on'] = True    # the candidate's test: a simulation step's pause
            pause()
        return 0.9

    a = make_adapter(tmp_path, sim=sim, pause=pause)
    feed(a, 0, [0.01] * 4)
    a.start_test()              # the deployed policy's own test, done before
    closing['on'] = where == 'fine-tuning'
    with pytest.raises(RoundStopped):
        a.step()
    kinds = [json.loads(line)['kind'] for line in open(tmp_path / 'adapt' / 'history.jsonl')]
    assert 'candidate' not in kinds and a.fuse.running == 0 and list(a.fuse.versions) == [0]
    # Started again from its files, the adapter goes on: the next round proposes version 1.
    b = make_adapter(tmp_path, sim=lambda flat: 0.9)
    feed(b, 0, [0.01] * 4)
    r = b.step()
    assert r.kind == 'deployed' and r.publish[1] == 1
