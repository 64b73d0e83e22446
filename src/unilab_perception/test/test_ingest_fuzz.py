# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Property tests: hostile messages are refused with InvalidMessage or give usable arrays.

"Usable" is what reaches the policy and the trainer: finite in float32 and
within ``ingest.MAX_MAGNITUDE``. No other exception may escape (the node only
catches InvalidMessage / JointLayoutError).
"""

from hostile import (DATATYPES, F32_MAX, FIELD_NAMES, fill_points, HOSTILE_FLOATS, imu_msg,
                     task_tensors, velodyne_fields)
from hostile import cloud_msg as make_msg  # noqa: I100 - one name renamed
from hypothesis import given, settings
from hypothesis import strategies as st
import numpy as np
import pytest
from unilab_core.joint_names import batched_joint_names, JointLayoutError, JointStateIndex
from unilab_perception.ingest import (check_task_state, check_values, cloud_points,
                                      InvalidMessage, MAX_MAGNITUDE, read_cloud, read_imu, usable)
from unilab_perception.joint_obs import joint_field
from unilab_perception.params import BevSection, EncoderSection, PointCloudSection
from unilab_perception.pipeline import CloudPipeline

SETTINGS = dict(max_examples=200, deadline=None, derandomize=True)
hostile = st.sampled_from(HOSTILE_FLOATS)


def f32(values) -> np.ndarray:
    """Return ``values`` cast to float32 as a sender would (1e39 becomes Inf, no warning)."""
    with np.errstate(over='ignore'):
        return np.array(values, np.float32)


def assert_usable(arr):
    """Every value finite in float32 and within MAX_MAGNITUDE."""
    a = np.asarray(arr)
    assert a.dtype == np.float32, a.dtype
    assert np.all(np.abs(a) <= MAX_MAGNITUDE), a[~(np.abs(a) <= MAX_MAGNITUDE)]


# ------------------------------------------------------------------ values
def test_check_values_in_float32_precision():
    # Finite in float64, Inf once cast to float32: refused, naming field and value.
    with pytest.raises(InvalidMessage, match=r'`gyro` has 1 value.*index 1'):
        check_values(np.array([0.0, 1e39, 2.0]), 'gyro')
    assert check_values(np.array([F32_MAX / 1e21]), 'x').dtype == np.float32
    for v in (np.nan, np.inf, 1.0000001e18, -1e19, 1e300):
        with pytest.raises(InvalidMessage):
            check_values([v], 'x')
    np.testing.assert_array_equal(check_values([1e18, -1e18, 5e-324], 'x'),
                                  np.float32([1e18, -1e18, 0]))


# ------------------------------------------------------------------ PointCloud2
field = st.tuples(st.sampled_from(FIELD_NAMES), st.integers(0, 40), st.sampled_from(DATATYPES),
                  st.sampled_from([0, 1, 1, 1, 2, 3]))


@st.composite
def any_cloud(draw):
    """Draw a PointCloud2 with arbitrary fields, offsets, point_step, geometry, data length."""
    fields = draw(st.lists(field, max_size=6))
    if draw(st.booleans()):  # mostly-valid xyz so the value checks are reached too
        fields = draw(st.sampled_from([velodyne_fields(7)[0], velodyne_fields(8)[0]])) + fields
    point_step = draw(st.integers(0, 56))
    width, height = draw(st.integers(0, 9)), draw(st.integers(0, 3))
    row_pad = draw(st.sampled_from([0, 0, 0, 3, 8]))
    big = draw(st.booleans())
    values = draw(st.lists(hostile, min_size=1, max_size=7))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    row = fill_points(fields, point_step, width, values, big, rng) + bytes(row_pad)
    data = row * height
    delta = draw(st.sampled_from([0, 0, 0, 0, -1, 1, -9]))
    data = data[:max(len(data) + delta, 0)] if delta < 0 else data + bytes(delta)
    row_step = draw(st.sampled_from([width * point_step + row_pad, 0, 2**32 - 1,
                                     width * point_step + row_pad + 1]))
    return make_msg(fields, point_step, width, height, row_step, data, big)


@st.composite
def velodyne_cloud(draw):
    """Draw a well-formed float32/float64 x, y, z, intensity, time cloud of hostile values."""
    fields, step = velodyne_fields(draw(st.sampled_from([7, 8])))
    n = draw(st.integers(1, 40))
    values = draw(st.lists(hostile, min_size=1, max_size=12))
    big = draw(st.booleans())
    data = fill_points(fields, step, n, values, big, np.random.default_rng(0))
    return make_msg(fields, step, n, 1, step * n, data, big)


@settings(**SETTINGS)
@given(st.one_of(any_cloud(), velodyne_cloud()), st.sampled_from(['filter', 'drop']))
def test_cloud_points_are_usable_or_refused(msg, nonfinite):
    try:
        pts, keep = cloud_points(read_cloud(msg), 'intensity', nonfinite)
    except InvalidMessage:
        return
    assert_usable(pts)
    assert pts.shape == (int(keep.sum()), 4) and pts.shape[0] > 0


STAGES = [['roi', 'voxel', 'statistical_outlier'], ['voxel'], ['radius_outlier'],
          ['deskew', 'statistical_outlier'], []]


@pytest.fixture(scope='module')
def pipelines():
    """One CloudPipeline per stage list (no ROI: huge but usable points reach the stages)."""
    return [CloudPipeline(PointCloudSection(stages=s, voxel_size=0.05, sor_k=3),
                          BevSection(feature_dim=4, channels=2), EncoderSection(device='cpu'))
            for s in STAGES]


def _spin(times):
    """Return a point_rotation callback: a slow yaw over the sweep."""
    angle = 0.5 * np.asarray(times, np.float64)
    q = np.stack([np.zeros_like(angle), np.zeros_like(angle), np.sin(angle / 2),
                  np.cos(angle / 2)], axis=1)
    return q, np.array([0.0, 0.0, 0.0, 1.0])


@settings(**SETTINGS)
@given(velodyne_cloud(), st.integers(0, len(STAGES) - 1))
def test_every_stage_gives_usable_points_or_refuses(pipelines, msg, which):
    pipe = pipelines[which]
    try:
        pts = pipe.process(read_cloud(msg), _spin)
    except InvalidMessage:
        return
    assert_usable(np.asarray(pts))


def test_intensity_and_time_are_checked():
    fields, step = velodyne_fields(7)
    good = [1.0, 2.0, 0.5, 10.0, 0.01]
    for bad_at, value, kind in ((3, np.nan, 'empty'), (3, np.inf, 'empty'),
                                (3, 3.5e38, None), (4, np.nan, 'nonfinite_time')):
        vals = list(good)
        vals[bad_at] = value
        data = f32([vals]).tobytes()
        msg = make_msg(fields, step, 1, 1, step, data)
        pipe = CloudPipeline(PointCloudSection(stages=['deskew']), BevSection(),
                             EncoderSection(device='cpu'))
        if kind is None:  # 3.5e38 is Inf in float32 already: the cast gives Inf
            kind = 'empty'
        with pytest.raises(InvalidMessage) as info:
            pipe.process(read_cloud(msg), _spin)
        assert info.value.kind == kind
    # float64 fields: 1e300 is finite there, Inf in float32: the point is filtered.
    fields, step = velodyne_fields(8)
    data = np.array([[1e300, 0, 0, 1, 0], [1.0, 2.0, 3.0, 4.0, 0]], np.float64).tobytes()
    pts, keep = cloud_points(read_cloud(make_msg(fields, step, 2, 1, 2 * step, data)))
    np.testing.assert_array_equal(pts, [[1, 2, 3, 4]])
    np.testing.assert_array_equal(keep, [False, True])


def test_multi_count_coordinate_is_refused():
    fields = [('x', 0, 7, 3), ('y', 12, 7, 1), ('z', 16, 7, 1)]
    msg = make_msg(fields, 20, 2, 1, 40, bytes(40))
    with pytest.raises(InvalidMessage) as info:
        cloud_points(read_cloud(msg))
    assert info.value.kind == 'field_count'


# ------------------------------------------------------------------ Imu
@settings(**SETTINGS)
@given(st.tuples(hostile, hostile, hostile), st.tuples(hostile, hostile, hostile),
       st.sampled_from([(0.0, 0.0, 0.0, 1.0), (np.nan, 0, 0, 1), (0, 0, 0, 0.5),
                        (0, 0, 0, 1e300), (0.5, 0.5, 0.5, 0.5)]),
       st.sampled_from([0.0, -1.0, np.nan, np.inf, 1e300]))
def test_imu_values_are_usable_or_refused(gyro, acc, quat, cov):
    try:
        s = read_imu(imu_msg(gyro, acc, quat, cov))
    except InvalidMessage as exc:
        assert exc.kind in ('nonfinite_imu', 'orientation_norm')
        return
    assert_usable(usable(s.angular_velocity)[0])
    assert_usable(usable(s.linear_acceleration)[0])
    if s.orientation is not None:
        assert np.all(np.isfinite(s.orientation))
        assert abs(np.linalg.norm(s.orientation) - 1.0) <= 1e-3


def test_imu_beyond_float32_is_refused():
    # Finite in float64 (the old check), Inf in the float32 observation.
    for gyro, acc in (((1e300, 0, 0), (0, 0, 9.81)), ((0, 0, 0), (0, 1e39, 0)),
                      ((0, 0, 0), (0, 0, 3.5e38))):
        with pytest.raises(InvalidMessage, match='nonfinite_imu'):
            read_imu(imu_msg(gyro, acc))
    s = read_imu(imu_msg((0.0, 0.0, 1e17), (0.0, 0.0, -1e18)))  # large but usable
    assert s.angular_velocity[2] == 1e17


# ------------------------------------------------------------------ JointState
@settings(**SETTINGS)
@given(st.lists(hostile, min_size=4, max_size=4), st.lists(hostile, min_size=4, max_size=4),
       st.integers(0, 3))
def test_joint_state_is_usable_or_refused(pos, vel, cut):
    names = batched_joint_names(['a', 'b'], 2)
    index = JointStateIndex(['a', 'b'], 2)
    pos = np.asarray(pos, np.float64)
    vel = np.asarray(vel, np.float64)[:4 - cut]  # a short velocity array is refused
    try:
        q = joint_field(index, names, pos, 'position')
        qd = joint_field(index, names, vel, 'velocity')
    except JointLayoutError:
        return
    assert_usable(q)
    assert_usable(qd)


# ------------------------------------------------------------------ task state
N, E = 3, 2
vec = st.lists(hostile, min_size=N, max_size=N).map(f32)
flags = st.lists(st.sampled_from([0.0, 1.0, 0.5, -1.0, np.nan, 2.0]), min_size=N,
                 max_size=N).map(lambda v: np.array(v, np.float32))


@st.composite
def task_state(draw):
    """Draw a task state whose tensors are each ordinary, hostile, missing or misshapen."""
    def pick(strategy, good):
        choice = draw(st.sampled_from(['good', 'good', 'hostile', 'missing', 'shape']))
        if choice == 'good':
            return good
        if choice == 'hostile':
            return draw(strategy)
        if choice == 'missing':
            return 'missing'
        return np.zeros(draw(st.sampled_from([(N + 1,), (N, 1), ()])), np.float32)
    done = draw(st.lists(st.booleans(), min_size=N, max_size=N))
    term = np.array(done, np.float32)
    t = task_tensors(N, E, episode_return=np.where(term > 0, 5.0, np.nan).astype(np.float32),
                     episode_length=np.where(term > 0, 10.0, 0.0).astype(np.float32),
                     terminated=term)
    extras = st.lists(hostile, min_size=N * E, max_size=N * E).map(
        lambda v: f32(v).reshape(N, E))
    for name, strategy in (('extras', extras), ('reward', vec), ('terminated', flags),
                           ('truncated', flags), ('episode_return', vec),
                           ('episode_length', vec)):
        t[name] = pick(strategy, t[name])
    return {k: v for k, v in t.items() if not (isinstance(v, str) and v == 'missing')}


@settings(**SETTINGS)
@given(task_state())
def test_task_state_is_consistent_or_refused(t):
    try:
        check_task_state(t, N, E)
    except InvalidMessage:
        return
    assert_usable(t['extras'].astype(np.float32))
    if 'reward' not in t:
        assert 'terminated' not in t and 'truncated' not in t
        return
    assert_usable(t['reward'])
    done = np.zeros(N, bool)
    for k in ('terminated', 'truncated'):
        assert set(np.unique(t[k])) <= {0.0, 1.0}
        done |= t[k] == 1
    if 'episode_return' in t:
        assert_usable(t['episode_return'][done])
        assert np.isnan(t['episode_return'][~done]).all()
    if 'episode_length' in t:
        assert np.all(t['episode_length'] >= 0)


@pytest.mark.parametrize('change,kind', [
    (dict(extras=np.full((N, E), np.nan, np.float32)), 'extras'),
    (dict(extras=np.full((N, E), 3e38)), 'extras'),  # float64 input: checked as float32
    (dict(reward=np.array([0, np.inf, 0], np.float32)), 'reward'),
    (dict(reward=np.array([0, 1e19, 0], np.float32)), 'reward'),
    (dict(terminated=np.array([0, 0.5, 0], np.float32)), 'flags'),
    (dict(truncated=np.array([np.nan, 0, 0], np.float32)), 'flags'),
    (dict(episode_return=np.array([1.0, np.nan, np.nan], np.float32)), 'episode_return'),
    (dict(terminated=np.array([1, 0, 0], np.float32),
          episode_return=np.array([np.inf, np.nan, np.nan], np.float32)), 'episode_return'),
    (dict(episode_length=np.array([-1, 0, 0], np.float32)), 'episode_length'),
    (dict(episode_length=np.array([0.5, 0, 0], np.float32)), 'episode_length'),
    (dict(extras=np.zeros((N, E + 1), np.float32)), 'shape'),
    (dict(reward=np.zeros((N, 1), np.float32)), 'shape'),
])
def test_task_state_named_refusals(change, kind):
    with pytest.raises(InvalidMessage) as info:
        check_task_state(task_tensors(N, E, **change), N, E)
    assert info.value.kind == kind
    t = task_tensors(N, E)
    del t['terminated']
    with pytest.raises(InvalidMessage, match='not all of reward'):
        check_task_state(t, N, E)
    check_task_state({'extras': np.zeros((N, E), np.float32)}, N, E)  # deploy: extras only
