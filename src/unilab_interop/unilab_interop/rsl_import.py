# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab import-policy rsl_rl FILE --task T [--spec FILE]``: an rsl_rl policy as a UniLab run.

FILE is rsl_rl's training checkpoint ``model_<it>.pt`` (``actor_state_dict``,
``critic_state_dict``, ``iter``, ``infos``) or its ``policy.onnx``
(``export_policy_to_onnx``: input ``obs`` [1, obs_dim], output ``actions``, the
normaliser inside; its initializers keep the actor's parameter names). The
weights go into our network (``unilab_interop.convert``) and a run directory
is written as training writes one (``config.yaml``, ``graph_params.yaml``,
``checkpoints/latest.pt``), so ``deploy``, ``play``, ``bench robot`` and
adaptation take it like a run of ours.

The spec (YAML) says what the network's inputs and outputs mean; without one
the policy is taken to be trained on our own task through
``unilab_interop.vecenv`` (our layout, our joint order, the task's action map)::

    observation:            # in order; sizes must add up to the network's input
      - {name: joint_position, size: 6}
      - {name: joint_velocity, size: 6}
      - {name: extras, size: 9}
    joint_names: [shoulder_pan, ...]   # the order of the actions and joint terms
    action_mode: relative   # relative | offset | absolute (docs/actions.md)
    action_scale: 0.04      # one value or one per joint
    action_offset: []       # offset mode: the pose actions are around
    action_clip: 0          # optional: |action| clipped to this before the map (0: none)
    activation: elu         # the MLP's activation (checkpoints do not record it)
    joint_range:            # optional: the joint positions it was trained in (rad)
      low: [...]            # per joint, in joint_names order
      high: [...]

rsl_rl records no joint range; one given here becomes the run's trained
envelope (``unilab_policy.envelope``), so ``deploy`` narrows the gate to it as
it does for a policy trained here; without one ``deploy`` warns and enforces
the driver's limits only.

Isaac Lab orders joints as the articulation lists them, not as the URDF does,
a classic deploy fault: every difference in sizes, names or order is refused,
naming the joint or term (ConfigError, exit 2); nothing is reordered silently.
"""

from __future__ import annotations

import dataclasses
import math
import pathlib
import pickle

import torch
from unilab_bringup.prepare import prepare_run, task_info
from unilab_core.config import ConfigError, ModelSection, NormalizationSection, read_yaml
from unilab_core.graph import holds_joint_positions
from unilab_interop.convert import (ACTIVATIONS, bundle_state_from_rsl, ConvertError, IMPORT_CLIP,
                                    mlp_shape, RSL_NORM_EPS)
from unilab_policy.checkpoint import save_checkpoint
from unilab_policy.envelope import KEY as ENVELOPE_KEY, TrainedEnvelope
from unilab_policy.models import PolicyBundle
from unilab_policy.networks import build_bundle

SPEC_KEYS = {'observation', 'joint_names', 'action_mode', 'action_scale', 'action_offset',
             'action_clip', 'activation', 'task', 'joint_range', 'action_history',
             'critic_only'}


@dataclasses.dataclass
class RslPolicy:
    """rsl_rl actor (and critic) weights read from a checkpoint or an ONNX file."""

    actor: dict
    critic: dict | None
    source: str  # 'checkpoint' or 'onnx'
    iteration: int | None = None


def read_rsl_policy(path: str | pathlib.Path, trust_pickle: bool = False) -> RslPolicy:
    """
    Read ``model_<it>.pt`` or ``policy.onnx``; ConfigError naming the file otherwise.

    A checkpoint is read with torch's weights-only loader (tensors, numbers, dicts): a
    pickle can run code, so one holding other objects (rsl_rl's ``infos`` may) is refused
    unless ``trust_pickle`` (``--trust-pickle``: the file comes from someone you trust).
    """
    path = pathlib.Path(path)
    if not path.is_file():
        raise ConfigError(f'import-policy: {path} not found')
    if path.suffix == '.onnx':
        return _read_onnx(path)
    try:
        state = torch.load(path, map_location='cpu', weights_only=not trust_pickle)
    except pickle.UnpicklingError as exc:
        raise ConfigError(f'import-policy: {path} is not a readable torch file of weights '
                          'only: it is damaged, or it holds objects beyond weights, whose '
                          'loading can run code (give --trust-pickle if it comes from someone '
                          f'you trust; {str(exc).splitlines()[0]})') from None
    except Exception as exc:  # noqa: BLE001 - any unreadable file is the user's error
        raise ConfigError(f'import-policy: {path} is not a readable torch file ({exc})') \
            from None
    if not isinstance(state, dict) or 'actor_state_dict' not in state:
        keys = sorted(state) if isinstance(state, dict) else type(state).__name__
        raise ConfigError(f'import-policy: {path} is not an rsl_rl checkpoint (no '
                          f'actor_state_dict; has {keys})')
    return RslPolicy(state['actor_state_dict'], state.get('critic_state_dict'), 'checkpoint',
                     state.get('iter'))


def _read_onnx(path: pathlib.Path) -> RslPolicy:
    import onnx
    from onnx import numpy_helper
    try:
        model = onnx.load(str(path))
    except Exception as exc:  # noqa: BLE001
        raise ConfigError(f'import-policy: {path} is not a readable ONNX file ({exc})') \
            from None
    names_in = [i.name for i in model.graph.input]
    names_out = [o.name for o in model.graph.output]
    if names_in != ['obs'] or names_out != ['actions']:
        raise ConfigError(f'import-policy: {path} has inputs {names_in} and outputs '
                          f'{names_out}; rsl_rl exports one input `obs` and one output '
                          '`actions`')
    actor = {i.name: torch.from_numpy(numpy_helper.to_array(i).copy())
             for i in model.graph.initializer}
    if not any(k.startswith('mlp.') for k in actor):
        raise ConfigError(f'import-policy: {path} carries no rsl_rl MLP weights '
                          '(initializers `mlp.<k>.weight`): only MLPModel policies import')
    for node in model.graph.node:
        trans_b = {a.name: a.i for a in node.attribute}.get('transB', 0)
        if node.op_type == 'Gemm' and node.input[1].startswith('mlp.') and trans_b != 1:
            raise ConfigError(f'import-policy: {path}: layer {node.input[1]} is not stored as '
                              'torch.nn.Linear exports it (Gemm transB=1)')
    if 'obs_normalizer._mean' in actor and 'obs_normalizer._std' not in actor:
        # The exporter folds ``_std + eps`` into one constant: the divisor of (obs - mean).
        sub = [n.output[0] for n in model.graph.node
               if n.op_type == 'Sub' and list(n.input) == ['obs', 'obs_normalizer._mean']]
        div = [n.input[1] for n in model.graph.node
               if n.op_type == 'Div' and sub and n.input[0] == sub[0] and n.input[1] in actor]
        if not div:
            raise ConfigError(f'import-policy: {path}: the observation normaliser is not '
                              '(obs - mean) / (std + eps) as rsl_rl exports it')
        actor['obs_normalizer._std'] = actor[div[0]] - RSL_NORM_EPS
    return RslPolicy(actor, None, 'onnx')


def history_of(spec: dict, where: str) -> int:
    """Return the spec's ``action_history``: past commands appended to the observation."""
    h = spec.get('action_history', 0)
    if not isinstance(h, int) or isinstance(h, bool) or h < 0:
        raise ConfigError(f'{where}: action_history must be an integer >= 0, got {h!r}')
    return h


def critic_only_of(spec: dict, where: str) -> list:
    """Return the spec's ``critic_only`` ([offset, size] the actor does not read, or [])."""
    c = spec.get('critic_only', [])
    if c and not (isinstance(c, list) and len(c) == 2
                  and all(isinstance(v, int) and not isinstance(v, bool) for v in c)
                  and c[0] >= 0 and c[1] >= 1):
        raise ConfigError(f'{where}: critic_only must be [offset, size] (integers, size >= 1) '
                          f'or [], got {c!r}')
    return list(c)


def task_layout(info, history: int = 0) -> list[tuple[str, int]]:
    """Return the network input's terms in order: (name, size); the history last."""
    j = len(info.joint_names)
    terms = ([('joint_position', j), ('joint_velocity', j), ('extras', info.extras_dim)]
             if info.uses_joint_state else [('extras', info.extras_dim)])
    if history:
        terms.append(('action_history', history * info.action_dim))
    return terms


def check_spec(spec: dict, info, in_dim: int, out_dim: int, where: str) -> None:
    """Raise ConfigError naming every difference between the spec, the network and the task."""
    problems = []
    unknown = sorted(set(spec) - SPEC_KEYS)
    if unknown:
        problems.append(f'unknown keys {unknown} (known: {sorted(SPEC_KEYS)})')
    if spec.get('task') not in (None, info.name):
        problems.append(f'task: the spec is for `{spec["task"]}`, --task is `{info.name}`')
    history = history_of(spec, where)
    layout = task_layout(info, history)
    if 'observation' in spec:
        terms = spec['observation']
        try:
            given = [(str(t['name']), int(t['size'])) for t in terms]
        except (TypeError, KeyError, ValueError):
            raise ConfigError(f'{where}: observation must be a list of {{name, size}}, got '
                              f'{terms!r}') from None
        size = sum(s for _, s in given)
        if size != in_dim:
            problems.append(f'observation: the terms add up to {size}, the network takes '
                            f'{in_dim}')
        for k in range(max(len(given), len(layout))):
            g = given[k] if k < len(given) else None
            t = layout[k] if k < len(layout) else None
            if g != t:
                problems.append(f'observation term {k}: the spec has '
                                f'{"%s (%d)" % g if g else "nothing"}, task {info.name} has '
                                f'{"%s (%d)" % t if t else "nothing"}')
    width = sum(size for _, size in layout)
    private = critic_only_of(spec, where)
    if private and private[0] + private[1] > width:
        problems.append(f'critic_only {private}: beyond the {width} observation values')
    elif in_dim != width - (private[1] if private else 0):
        problems.append(f'the network takes {in_dim} observation values, task {info.name} '
                        f'gives {width} ({", ".join(f"{n} {s}" for n, s in layout)})'
                        + (f', {private[1]} of them the critic\'s only' if private else ''))
    if out_dim != info.action_dim:
        problems.append(f'the network gives {out_dim} actions, task {info.name} commands '
                        f'{info.action_dim} joints')
    if 'joint_names' in spec:
        problems += _joint_problems(list(spec['joint_names']), list(info.joint_names),
                                    info.name)
    if 'joint_range' in spec:
        problems += _range_problems(spec['joint_range'], info)
    if problems:
        raise ConfigError(f'{where}: does not fit task {info.name}: ' + '; '.join(problems))


def _joint_problems(given: list, task: list, name: str) -> list[str]:
    missing = [j for j in task if j not in given]
    extra = [j for j in given if j not in task]
    out = []
    if missing:
        out.append(f'joint_names lacks {missing} of task {name}')
    if extra:
        out.append(f'joint_names has {extra}, unknown to task {name} (its joints: {task})')
    if not missing and not extra and given != task:
        wrong = [f'{k}: {g} (task: {t})' for k, (g, t) in enumerate(zip(given, task))
                 if g != t]
        out.append(f'joint order differs from task {name} at {", ".join(wrong)}; reorder '
                   'the policy\'s joints to the task\'s order')
    if len(given) != len(set(given)):
        out.append(f'joint_names repeats a name: {given}')
    return out


def _range_problems(given, info) -> list[str]:
    """Return what is wrong with a spec's ``joint_range`` ({low: [J], high: [J]})."""
    if not holds_joint_positions(info):
        return [f'joint_range: task {info.name} does not command the joint positions it '
                'observes; a trained joint range means nothing to its gate']
    joints = len(info.joint_names)
    if not isinstance(given, dict) or set(given) != {'low', 'high'}:
        return [f'joint_range must be {{low: [...], high: [...]}} (rad, one per joint), '
                f'got {given!r}']
    try:
        low, high = ([float(v) for v in given[k]] for k in ('low', 'high'))
    except (TypeError, ValueError):
        return [f'joint_range: low and high must be lists of numbers, got {given!r}']
    if len(low) != joints or len(high) != joints:
        return [f'joint_range: {len(low)} low and {len(high)} high values, the task has '
                f'{joints} joints']
    if not all(map(math.isfinite, low + high)):
        return [f'joint_range: values must be finite, got {given!r}']
    wrong = [k for k, (lo, hi) in enumerate(zip(low, high)) if lo > hi]
    return [f'joint_range: low > high at joint {wrong}'] if wrong else []


def read_spec(path: str | None) -> dict:
    """Return the spec file's mapping ({} without one)."""
    if not path:
        return {}
    spec = read_yaml(path)
    if not isinstance(spec, dict):
        raise ConfigError(f'--spec {path}: expected a mapping, got {type(spec).__name__}')
    return spec


def spec_overrides(spec: dict, hidden: list[int], where: str) -> dict:
    """Return the training-config overrides that rebuild the network and its action map."""
    activation = str(spec.get('activation', 'elu'))
    if activation not in ACTIVATIONS:
        raise ConfigError(f'{where}: activation {activation!r} is not one of {ACTIVATIONS}')
    out = {'model.hidden_sizes': list(hidden), 'model.activation': activation,
           'model.action_history': history_of(spec, where),
           'model.critic_only': critic_only_of(spec, where),
           'normalization.observations': True, 'normalization.clip': IMPORT_CLIP}
    # A spec that says how actions map but not how they are clipped: no clip (specs from
    # before the key); without a spec the task's own map, its clip included.
    if 'action_clip' in spec or any(k in spec for k in ('action_mode', 'action_scale')):
        clip = spec.get('action_clip', 0.0)
        if not isinstance(clip, (int, float)) or isinstance(clip, bool) or \
                not (math.isfinite(clip) and clip >= 0):
            raise ConfigError(f'{where}: action_clip must be a number >= 0 (0: none), '
                              f'got {clip!r}')
        out['model.action_clip'] = float(clip)
    for key in ('action_mode', 'action_scale', 'action_offset'):
        if key in spec:
            value = spec[key]
            out[f'model.{key}'] = [float(v) for v in value] if isinstance(value, list) \
                else ([float(value)] if key != 'action_mode' else str(value))
    return out


def import_bundle(policy: RslPolicy, info, spec: dict, where: str) -> tuple[dict, PolicyBundle]:
    """Check ``policy`` against task ``info`` and the spec; return (overrides, bundle)."""
    try:
        in_dim, hidden, out_dim = mlp_shape(policy.actor, 'mlp.')
    except ConvertError as exc:
        raise ConfigError(f'{where}: {exc}') from None
    check_spec(spec, info, in_dim, out_dim, where)
    private = critic_only_of(spec, where)
    width = in_dim + (private[1] if private else 0)  # the critic reads every column
    critic = policy.critic
    if critic is not None:
        c_in, c_hidden, c_out = mlp_shape(critic, 'mlp.')
        if (c_in, c_hidden, c_out) != (width, hidden, 1):
            critic = None  # our actor and critic share widths; the actor is what deploys
    overrides = spec_overrides(spec, hidden, where)
    model = ModelSection.model_validate(
        {k.split('.')[1]: v for k, v in overrides.items() if k.startswith('model.')})
    norm = NormalizationSection.model_validate(
        {k.split('.')[1]: v for k, v in overrides.items() if k.startswith('normalization.')})
    # The network's input is the observation and then the history (build_bundle adds it).
    bundle = build_bundle(width - model.action_history * out_dim, out_dim, model, norm)
    try:
        bundle.load_state_dict(bundle_state_from_rsl(policy.actor, critic, bundle))
    except ConvertError as exc:
        raise ConfigError(f'{where}: {exc}') from None
    return overrides, bundle.eval()


def import_rsl(path: str, task: str, spec_path: str | None = None,
               run_dir: str | None = None, trust_pickle: bool = False) -> pathlib.Path:
    """Write a UniLab run directory holding the rsl_rl policy at ``path``; return it."""
    where = f'import-policy rsl_rl {path}'
    info, _ = task_info(task)
    spec = read_spec(spec_path)
    policy = read_rsl_policy(path, trust_pickle)
    overrides, bundle = import_bundle(policy, info, spec, where)
    run = prepare_run([], {'run.task': task, **overrides},
                      run_dir=run_dir or f'runs/{task}-rsl_rl-import')
    envelope = {}
    if 'joint_range' in spec:
        # The spec's range as the trained envelope a run of ours records (no samples of ours).
        p = run.graph.parameters['trainer']  # what our trainer records it with
        env = TrainedEnvelope(p.envelope_joints, p.workspace, p.workspace_frame)
        r = spec['joint_range']
        env.load_state_dict({'joint_low': r['low'], 'joint_high': r['high']})
        envelope = {ENVELOPE_KEY: env.state_dict()}
    state = {'bundle': bundle.state_dict(), **envelope,
             'imported_from': {'format': 'rsl_rl', 'file': str(pathlib.Path(path).resolve()),
                               'source': policy.source,
                               'iteration': -1 if policy.iteration is None
                               else int(policy.iteration),
                               'critic': policy.critic is not None}}
    save_checkpoint(run.run_dir / 'checkpoints' / 'latest.pt', state)
    return run.run_dir
