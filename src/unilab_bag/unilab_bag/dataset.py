# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Build offline transitions (obs, action, reward, next_obs, terminated, truncated) from bags.

Two sources:

``rollout`` - ``/unilab/rollout`` chunks (``unilab_policy.chunk``): ``obs``,
``actions``, ``rewards``, ``terminated``, ``truncated`` are ``[K, N, ...]`` and
``next_obs`` ``[N, obs]`` follows the last step. The next observation of step
``k`` is ``obs[k + 1]`` (``next_obs`` for the last step).

``sensors`` - what a robot records: ``/joint_states`` (a training run's
``/unilab/sim/joint_states``) + ``/unilab/task_state`` are passed through the
perception layer's ``build_observation`` (the same function the perception node
runs), the action of control step ``s`` comes from ``/unilab/action`` with
``seq == s``, and the step's outcome (reward, terminated, truncated) from the
task state of step ``s + 1``.

Action history (``model.action_history = H``): the policy's input is the
observation followed by its last ``H`` commands (``unilab_policy.history``).
Rollout chunks already carry that input. The sensors source rebuilds it from
``/unilab/action`` as the policy node keeps it: clipped to the actuator
range, started over at every episode start with the held command (the joint
positions for position-controlled joints, else zeros). Rows whose history is
not known (an env's first ``H`` steps in the bag before its first episode
start, or after a gap in the recorded steps) are left out and counted
(``history_unknown``).

Episode ends: the bridge resets an env in the step that ends its episode, so
the observation that follows a ``terminated`` or ``truncated`` step belongs to
the next episode. Such rows keep their flags and get ``next_obs = obs``:
``terminated`` rows never bootstrap, and ``truncated`` rows bootstrap from
V(s_t) in place of the unobserved V(s_{t+1}) (the PPO trainer's time-out
approximation; see ``unilab_policy.offline.dataset``).

Damage: a bag whose files are damaged, a message that does not decode, a
chunk or step whose tensors are misshapen or hold NaN/Inf (or values beyond
``unilab_perception.ingest.MAX_MAGNITUDE``), is refused with a one-line
``BagDamagedError`` naming the bag; with ``allow_damaged`` it is left out,
counted, and listed in ``Dataset.damaged``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from unilab_bag.storage import BagDamagedError, BagError, BagReader
from unilab_core import topics
from unilab_core.joint_names import JointLayoutError, JointStateIndex
from unilab_perception.ingest import check_task_state, InvalidMessage, usable
from unilab_perception.joint_obs import build_observation, joint_field
from unilab_policy.history import ActionHistory

FIELDS = ('obs', 'actions', 'rewards', 'next_obs', 'terminated', 'truncated')


@dataclasses.dataclass(frozen=True)
class HistorySpec:
    """How the policy node kept its action history (``model.action_history``)."""

    length: int
    low: tuple = ()
    high: tuple = ()
    fill_joint_position: bool = False  # else zeros at an episode start


@dataclasses.dataclass
class Dataset:
    """Transitions as numpy arrays plus where they came from."""

    arrays: dict[str, np.ndarray]
    episode_returns: list[float]
    source: str
    bags: list[str]
    history_unknown: int = 0
    #: bag -> {'lost': {topic: n}, 'problems': [...]} for damaged bags read with allow_damaged
    damaged: dict = dataclasses.field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.arrays['obs'])

    def stats(self) -> dict:
        """Return counts and the behaviour policy's episode statistics."""
        r = np.asarray(self.episode_returns, dtype=np.float64)
        return {
            'transitions': len(self),
            'episodes': int(r.size),
            'behaviour_return': float(r.mean()) if r.size else float('nan'),
            'behaviour_return_std': float(r.std()) if r.size else float('nan'),
            'terminated': int(self.arrays['terminated'].sum()),
            'truncated': int(self.arrays['truncated'].sum()),
            'history_unknown': self.history_unknown,
            'damaged': self.damaged,
        }


def batch_tensors(msg) -> dict[str, np.ndarray]:
    """Return ``{name: array}`` of a deserialized (rosbags) TensorBatch."""
    out = {}
    for t in msg.tensors:
        shape = tuple(int(s) for s in t.shape)
        data = np.asarray(t.data, dtype=np.float32)
        if int(np.prod(shape)) != data.size:
            raise BagError(f'tensor `{t.name}` of `{msg.kind}` seq {msg.seq}: shape {shape} '
                           f'needs {int(np.prod(shape))} values, has {data.size}')
        out[t.name] = data.reshape(shape)
    return out


def _chunk_transitions(t: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Flatten one rollout chunk ``[K, N, ...]`` into ``[K*N, ...]`` transitions."""
    obs, nxt = t['obs'], np.concatenate([t['obs'][1:], t['next_obs'][None]], 0)
    term, trunc = t['terminated'] > 0.5, t['truncated'] > 0.5
    done = term | trunc
    nxt = np.where(done[..., None], obs, nxt)  # post-reset obs is not this episode's
    k, n = term.shape
    return {'obs': obs.reshape(k * n, -1), 'actions': t['actions'].reshape(k * n, -1),
            'rewards': t['rewards'].reshape(-1), 'next_obs': nxt.reshape(k * n, -1),
            'terminated': term.reshape(-1).astype(np.float32),
            'truncated': (trunc & ~term).reshape(-1).astype(np.float32)}


def _unusable(reader: BagReader, topic: str, why: str) -> None:
    """Refuse (BagDamagedError) or, with ``allow_damaged``, count one unusable message."""
    if not reader.allow_damaged:
        raise BagDamagedError(f'bag {reader.path}: {why} (pass --allow-damaged to leave such '
                              'messages out)')
    reader.discard(topic, why)


def _chunk_problem(t: dict[str, np.ndarray]) -> str:
    """Return why a rollout chunk cannot be used ('' when it can)."""
    missing = [f for f in ('obs', 'actions', 'rewards', 'terminated', 'truncated',
                           'next_obs') if f not in t]
    if missing:
        return f'lacks {missing}'
    obs, act, rew = t['obs'], t['actions'], t['rewards']
    if obs.ndim != 3 or act.ndim != 3 or rew.shape != obs.shape[:2] \
            or act.shape[:2] != rew.shape or t['terminated'].shape != rew.shape \
            or t['truncated'].shape != rew.shape or t['next_obs'].shape != obs.shape[1:]:
        return (f'misshapen (obs {obs.shape}, actions {act.shape}, rewards {rew.shape}, '
                f'next_obs {t["next_obs"].shape})')
    for f in ('obs', 'actions', 'rewards', 'next_obs'):
        if not usable(t[f])[1].all():
            return f'`{f}` holds NaN, Inf or values beyond 1e18'
    for f in ('terminated', 'truncated'):
        if not np.all((t[f] == 0) | (t[f] == 1)):
            return f'`{f}` holds values other than 0 and 1'
    return ''


def rollout_dataset(reader: BagReader, topic: str = topics.ROLLOUT
                    ) -> tuple[list[dict], list[float]]:
    """Return per-chunk transitions and finished-episode returns from one bag."""
    if topic not in reader.topics:
        raise BagError(f'bag {reader.path}: no `{topic}` topic (has '
                       f'{sorted(reader.topics)}); record it or use the sensors source')
    parts, returns, seen = [], [], set()
    for m, msg in reader.decoded([topic]):
        key = (int(msg.version), int(msg.seq))
        if key in seen:  # a chunk delivered twice (e.g. two bags of one run) counts once
            continue
        seen.add(key)
        try:
            t = batch_tensors(msg)
            problem = _chunk_problem(t)
        except BagError as exc:
            problem = str(exc)
        if problem:
            _unusable(reader, topic, f'rollout chunk seq {msg.seq} on `{topic}`: {problem}')
            continue
        parts.append(_chunk_transitions(t))
        if 'episode_return' in t:
            done = (t['terminated'] > 0.5) | (t['truncated'] > 0.5)
            ret = t['episode_return'][done]
            returns.extend(float(x) for x in ret[np.isfinite(ret)])
    return parts, returns


def sensor_dataset(reader: BagReader, joint_names: list[str], uses_joint_state: bool = True,
                   history: HistorySpec | None = None) -> tuple[list[dict], list[float], int]:
    """
    Return transitions built from sensors + task state + actions of one bag.

    Also returns how many rows were left out because their action history was
    not known (always 0 without ``history``).
    """
    # A training run's joint states are under its own name, a robot's under the standard one.
    js_topic = topics.SIM_JOINT_STATES if topics.SIM_JOINT_STATES in reader.topics \
        else topics.JOINT_STATES
    need = [topics.TASK_STATE, topics.ACTION]
    if uses_joint_state:
        need.append(js_topic)
    missing = [t for t in need if t not in reader.topics]
    if missing:
        raise BagError(f'bag {reader.path}: sensors source needs {missing}')
    joints: dict[int, tuple[np.ndarray, np.ndarray]] = {}
    tasks: dict[int, tuple[int, dict]] = {}
    actions: dict[int, np.ndarray] = {}
    index = None
    width = {}  # the first task state / action fixes [N, E] / [N, A]
    for m, msg in reader.decoded(need):
        if m.topic == js_topic:
            stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
            joints[stamp] = (msg.name, msg.position, msg.velocity)
            continue
        try:
            t = batch_tensors(msg)
            if m.topic == topics.TASK_STATE:
                shape = width.setdefault('extras', np.shape(t.get('extras')))
                if len(shape) != 2:
                    raise InvalidMessage('shape', f'`extras` has shape {shape}')
                check_task_state(t, *shape)
                stamp = msg.stamp_sec * 1_000_000_000 + msg.stamp_nanosec
                tasks.setdefault(int(msg.seq), (stamp, t))
            else:
                action = t['action']
                if action.shape != width.setdefault('action', action.shape) \
                        or action.ndim != 2 or not usable(action)[1].all():
                    raise InvalidMessage('action', f'`action` {action.shape} is misshapen or '
                                         'holds NaN/Inf')
                actions.setdefault(int(msg.seq), action)
        except (BagError, InvalidMessage, KeyError) as exc:
            _unusable(reader, m.topic, f'`{m.topic}` seq {msg.seq}: {exc}')
    obs: dict[int, np.ndarray] = {}
    for seq, (stamp, t) in tasks.items():
        q = qd = None
        if uses_joint_state:
            if stamp not in joints:
                continue
            names, pos, vel = joints[stamp]
            if index is None:
                index = JointStateIndex(joint_names, t['extras'].shape[0])
            try:
                q = joint_field(index, names, pos, 'position')
                qd = joint_field(index, names, vel, 'velocity')
            except JointLayoutError as exc:
                _unusable(reader, js_topic, f'joint state at {stamp}: {exc}')
                continue
        obs[seq] = build_observation(q, qd, t['extras'], uses_joint_state)
    known = None
    if history is not None and history.length:
        obs, known = _with_history(obs, tasks, actions, history)
    parts, returns, unknown = [], [], 0
    for seq in sorted(obs):
        if seq not in actions or seq + 1 not in obs:
            continue
        out = tasks[seq + 1][1]  # outcome of step seq is published with state seq + 1
        if 'reward' not in out or actions[seq].shape[0] != obs[seq].shape[0]:
            _unusable(reader, topics.TASK_STATE, f'step {seq + 1} has no reward / terminated / '
                      'truncated, or its action is for another number of envs')
            continue
        term, trunc = out['terminated'] > 0.5, out['truncated'] > 0.5
        done = term | trunc
        rows = {
            'obs': obs[seq], 'actions': actions[seq], 'rewards': out['reward'],
            'next_obs': np.where(done[:, None], obs[seq], obs[seq + 1]),
            'terminated': term.astype(np.float32),
            'truncated': (trunc & ~term).astype(np.float32)}
        if known is not None:
            keep = known[seq]
            unknown += int((~keep).sum())
            rows = {k: v[keep] for k, v in rows.items()}
        parts.append(rows)
        if 'episode_return' in out:
            returns.extend(float(x) for x in out['episode_return'][done])
    return parts, returns, unknown


def _with_history(obs: dict, tasks: dict, actions: dict, spec: HistorySpec):
    """
    Return ``(obs with the action history appended, known [N] per step)``.

    Steps in order: an env's history starts over at its episode start (the
    task state of that step flags the previous step's end, as the policy node
    reads it), every recorded action is pushed, and a step without a recorded
    action (or a missing step) makes every env's history unknown until it
    starts over or ``length`` actions are recorded again.
    """
    seqs = sorted(obs)
    n = obs[seqs[0]].shape[0]
    act_dim = next(iter(actions.values())).shape[1] if actions else 0
    hist = ActionHistory(n, act_dim, spec.length, spec.low or None, spec.high or None)
    since = np.zeros(n, np.int64)  # actions recorded since the history was last unknown
    started = np.zeros(n, bool)    # an episode start seen since then
    out, known, prev = {}, {}, None
    for seq in seqs:
        if prev is not None and seq != prev + 1:  # a gap: nothing known about those steps
            since[:], started[:] = 0, False
        t = tasks[seq][1]
        if 'terminated' in t:
            reset = (t['terminated'] > 0.5) | (t['truncated'] > 0.5)
            if reset.any():
                fill = obs[seq][reset, :act_dim] if spec.fill_joint_position else None
                hist.reset(reset, fill)
                since[reset], started[reset] = 0, True
        out[seq] = hist.observe(obs[seq])
        known[seq] = started | (since >= spec.length)
        if seq in actions:
            hist.push(actions[seq])
            since += 1
        else:
            hist.push(np.zeros((n, act_dim), np.float32))
            since[:], started[:] = 0, False
        prev = seq
    return out, known


def build_dataset(paths, source: str = 'rollout', joint_names=None,
                  uses_joint_state: bool = True, history: HistorySpec | None = None,
                  allow_damaged: bool = False, action_map=None) -> Dataset:
    """
    Read every bag of ``paths`` and concatenate their transitions.

    ``history``: the policy's action history, rebuilt by the sensors source
    (rollout chunks carry it already). ``action_map`` (the policy's
    ``ActionMap``): the sensors source's actions are the commands on the action
    topic; the map turns them back into the network's actions, as the rollout
    chunks carry them (None: commands are actions). A damaged bag raises BagDamagedError
    unless ``allow_damaged`` (then its readable, usable part is used and what
    was lost is listed in ``Dataset.damaged``).
    """
    parts, returns, unknown, damaged = [], [], 0, {}
    for p in paths:
        with BagReader(p, allow_damaged) as reader:
            if source == 'rollout':
                ps, rs = rollout_dataset(reader)
            elif source == 'sensors':
                ps, rs, u = sensor_dataset(reader, list(joint_names or []), uses_joint_state,
                                           history)
                unknown += u
                if action_map is not None:
                    for part in ps:
                        part['actions'] = action_map.action(part['obs'], part['actions'])
            else:
                raise ValueError(f'dataset source `{source}`: expected rollout or sensors')
            if reader.health.damaged:
                h = reader.health
                damaged[str(p)] = {'lost': dict(h.lost), 'problems': h.problems[:10],
                                   'summary': h.describe()}
        if not ps:
            raise BagError(f'bag {p}: no complete transitions from the {source} source')
        parts.extend(ps)
        returns.extend(rs)
    arrays = {f: np.concatenate([x[f] for x in parts], 0).astype(np.float32) for f in FIELDS}
    return Dataset(arrays, returns, source, [str(p) for p in paths], unknown, damaged)
