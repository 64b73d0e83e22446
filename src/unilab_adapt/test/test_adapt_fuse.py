# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The adaptation fuse: score sequences -> keep, reject or roll back; state survives restarts."""

import json

import pytest
from unilab_adapt.fuse import Fuse


def _fuse(tmp_path, **kw):
    f = Fuse(tmp_path / 'fuse.json', **kw)
    f.set_sim_success(0, 0.80)
    f.robot_result(0, 0.60, 50)
    return f


def test_a_candidate_worse_in_simulation_never_reaches_the_robot(tmp_path):
    f = _fuse(tmp_path)
    d = f.propose(1, 0.70)  # 0.10 below the running version's 0.80
    assert d.deploy == 0 and 'below the running version' in d.reason
    assert f.versions[1].status == 'rejected' and f.running == 0
    d = f.propose(2, 0.77)  # within the 0.05 tolerance
    assert d.deploy == 2 and f.running == 2 and f.versions[2].status == 'deployed'


def test_a_better_version_becomes_the_last_good_one(tmp_path):
    f = _fuse(tmp_path)
    f.propose(1, 0.80)
    d = f.robot_result(1, 0.70, 40)
    assert d.deploy == 1 and not d.alert and f.last_good == 1


def test_three_drops_in_a_row_roll_back_with_an_alert(tmp_path):
    f = _fuse(tmp_path)  # last good: version 0 at 0.60 on the robot
    for v, s in ((1, 0.50), (2, 0.52)):
        f.propose(v, 0.80)
        d = f.robot_result(v, s, 30)
        assert d.deploy == v and not d.alert and f.drop_streak == v
    f.propose(3, 0.80)
    d = f.robot_result(3, 0.40, 30)
    assert d.alert and d.deploy == 0 and f.running == 0 and f.rollbacks == 1
    assert 'rolled back to version 0' in d.reason
    assert [f.versions[v].status for v in (1, 2, 3)] == ['rolled_back'] * 3


def test_a_small_dip_or_a_recovery_breaks_the_streak(tmp_path):
    f = _fuse(tmp_path)
    f.propose(1, 0.80)
    f.robot_result(1, 0.50, 30)  # drop 1
    f.propose(2, 0.80)
    f.robot_result(2, 0.58, 30)  # within 0.05 of 0.60: not a drop, streak over
    assert f.drop_streak == 0
    for v in (3, 4):
        f.propose(v, 0.80)
        assert not f.robot_result(v, 0.40, 30).alert
    f.propose(5, 0.80)
    assert f.robot_result(5, 0.40, 30).alert


def test_thresholds_are_configurable(tmp_path):
    f = _fuse(tmp_path, drop_tolerance=0.2, consecutive_drops=1)
    f.propose(1, 0.80)
    assert not f.robot_result(1, 0.45, 30).alert  # 0.15 below: within 0.2
    f.propose(2, 0.80)
    assert f.robot_result(2, 0.30, 30).alert  # one drop is enough here
    with pytest.raises(ValueError):
        Fuse(tmp_path / 'x.json', consecutive_drops=0)


def test_windows_of_one_version_average_by_episodes(tmp_path):
    f = _fuse(tmp_path)
    f.propose(1, 0.80)
    f.robot_result(1, 1.0, 10)
    f.robot_result(1, 0.5, 30)
    assert f.versions[1].robot_success == pytest.approx(0.625)
    assert f.versions[1].robot_episodes == 40


def test_a_restarted_fuse_resumes_from_disk(tmp_path):
    f = _fuse(tmp_path)
    f.propose(1, 0.80)
    f.robot_result(1, 0.50, 30)
    again = Fuse(tmp_path / 'fuse.json')
    assert again.running == 1 and again.last_good == 0 and again.drop_streak == 1
    assert again.versions[1].robot_success == 0.5 and again.next_version() == 2
    data = json.loads((tmp_path / 'fuse.json').read_text())
    assert data['versions']['1']['parent'] == 0


def test_a_pinned_version_stays(tmp_path):
    f = _fuse(tmp_path)
    f.propose(1, 0.80)
    d = f.pin(0)
    assert d.deploy == 0 and f.running == 0
    d = f.propose(2, 0.95)
    assert d.deploy == 0 and f.versions[2].status == 'rejected' and 'pinned' in d.reason
    with pytest.raises(ValueError, match='no version 9'):
        f.pin(9)
    f.pin(None)
    assert f.propose(3, 0.95).deploy == 3


def test_with_drop_z_a_drop_within_the_noise_of_few_episodes_is_not_counted(tmp_path):
    f = _fuse(tmp_path, drop_z=1.0)  # last good: 0.60 over 50 episodes
    f.propose(1, 0.80)
    d = f.robot_result(1, 0.50, 16)  # 0.10 below, but one standard error is about 0.14
    assert f.drop_streak == 0 and not d.alert
    g = Fuse(tmp_path / 'bare.json')  # the bare threshold counts it
    g.set_sim_success(0, 0.80)
    g.robot_result(0, 0.60, 50)
    g.propose(1, 0.80)
    g.robot_result(1, 0.50, 16)
    assert g.drop_streak == 1
    f.propose(2, 0.80)
    f.robot_result(2, 0.10, 16)  # far below: counted
    assert f.drop_streak == 1


def test_hold_after_rollback_deploys_nothing_until_resumed_and_survives_a_restart(tmp_path):
    f = _fuse(tmp_path, hold_after_rollback=True, consecutive_drops=1)
    f.propose(1, 0.80)
    d = f.robot_result(1, 0.10, 30)
    assert d.alert and d.deploy == 0 and f.held
    again = Fuse(tmp_path / 'fuse.json', hold_after_rollback=True)
    assert again.held
    d = again.propose(2, 0.90)
    assert d.deploy == 0 and 'held' in d.reason and again.versions[2].status == 'rejected'
    again.resume()
    assert again.propose(3, 0.90).deploy == 3
