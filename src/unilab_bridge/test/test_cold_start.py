# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""What makes the bridge start fast must not change what it simulates."""

import mujoco
import numpy as np
import pytest

from unilab_bridge.tasks import make_task
from unilab_bridge.tasks import model_cache
from unilab_bridge.tasks.mj_batch import MjBatch

DISTURBED = {'enabled': True, 'network': {'action_drop_prob': 0.1}}


def _trajectory(name, eager, disturbances=None, steps=30, n=3):
    with make_task(name, n, seed=5, disturbances=disturbances) as task:
        if eager:
            task.sim.materialize()  # the MjData exist before the reset: the eager path
        states = [task.reset(seed=5)]
        rng = np.random.default_rng(1)
        mid = (task.action_low + task.action_high) / 2
        for _ in range(steps):
            states.append(task.step(mid + 0.3 * rng.standard_normal((n, task.action_dim))))
        return np.array([np.concatenate([s.joint_position, s.joint_velocity, s.extras], 1)
                         for s in states])


@pytest.mark.parametrize('name,disturbances', [('arm6_reach', None), ('quad_walk', None),
                                               ('arm6_reach', DISTURBED)])
def test_lazy_env_data_gives_the_eager_trajectory_bit_for_bit(name, disturbances):
    lazy = _trajectory(name, eager=False, disturbances=disturbances)
    eager = _trajectory(name, eager=True, disturbances=disturbances)
    np.testing.assert_array_equal(lazy, eager)


def test_reset_needs_no_per_env_data_until_a_step():
    with make_task('arm6_reach', 8, seed=0) as task:
        task.reset(seed=0)
        assert task.sim._data == [None] * 8
        task.step(np.zeros((8, 6)))
        assert all(d is not None for d in task.sim._data)


def test_env_never_reset_materialises_fresh():
    model = mujoco.MjModel.from_xml_string(
        '<mujoco><worldbody><body><joint name="j"/><geom size=".1"/></body></worldbody>'
        '<actuator><motor joint="j"/></actuator></mujoco>')
    batch = MjBatch(model, 2, 1, [0], [0])
    batch.read_env(1)  # not staged by env_data: must not read the scratch data
    assert batch._data[1] is not None and batch.qpos[1, 0] == 0.0
    batch.close()


def _write_model(tmp_path, mass='1'):
    (tmp_path / 'part.xml').write_text(
        f'<mujoco><worldbody><body><joint/><geom size=".1" mass="{mass}"/></body>'
        '</worldbody></mujoco>')
    main = tmp_path / 'main.xml'
    main.write_text('<mujoco><include file="part.xml"/></mujoco>')
    return main


def test_model_cache_hits_and_invalidates_on_an_included_file(tmp_path, monkeypatch):
    monkeypatch.setenv('UNILAB_CACHE_DIR', str(tmp_path / 'cache'))
    main = _write_model(tmp_path, mass='1')
    first = model_cache.load_model(main)
    entries = list((tmp_path / 'cache' / 'mjb').glob('main-*.mjb'))
    assert len(entries) == 1
    calls = []
    real = mujoco.MjModel.from_xml_path
    monkeypatch.setattr(mujoco.MjModel, 'from_xml_path',
                        lambda p: calls.append(p) or real(p))
    cached = model_cache.load_model(main)
    assert calls == []  # served from the .mjb
    np.testing.assert_array_equal(cached.body_mass, first.body_mass)
    _write_model(tmp_path, mass='3')  # only the included file changes
    changed = model_cache.load_model(main)
    assert len(calls) == 1 and changed.body_mass[1] == pytest.approx(3.0)
    assert len(list((tmp_path / 'cache' / 'mjb').glob('main-*.mjb'))) == 2


def test_model_cache_key_covers_mujoco_version_and_refuses_unknown_refs(tmp_path, monkeypatch):
    main = _write_model(tmp_path)
    key = model_cache.model_key(main)
    monkeypatch.setattr(mujoco, '__version__', '0.0.0')
    assert model_cache.model_key(main) != key
    missing = tmp_path / 'mesh.xml'
    missing.write_text('<mujoco><asset><mesh file="nowhere.stl"/></asset></mujoco>')
    assert model_cache.model_key(missing) is None  # compiled every time, never stale


def test_cached_model_simulates_like_the_compiled_one(tmp_path, monkeypatch):
    monkeypatch.setenv('UNILAB_CACHE_DIR', str(tmp_path))
    from unilab_bridge.tasks.arm6_reach import ASSET
    model_cache.load_model(ASSET)
    a, b = mujoco.MjModel.from_xml_path(str(ASSET)), model_cache.load_model(ASSET)
    da, db = mujoco.MjData(a), mujoco.MjData(b)
    da.ctrl[:] = db.ctrl[:] = 0.5
    mujoco.mj_step(a, da, nstep=50)
    mujoco.mj_step(b, db, nstep=50)
    np.testing.assert_array_equal(da.qpos, db.qpos)
