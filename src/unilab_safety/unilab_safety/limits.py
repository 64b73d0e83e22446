# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Joint limits in ros2_control's joint_limits vocabulary, loaded and vectorised."""

import dataclasses
import math
import os

import numpy as np
from unilab_core.errors import yaml_error
from unilab_safety.limits_parse import LimitsError, parse_joint
import yaml

__all__ = ['JointLimits', 'LimitSet', 'LimitsError', 'load_joint_limits']

_INF = math.inf


@dataclasses.dataclass
class JointLimits:
    """
    Limits of one joint, named as in ros2_control's joint_limits YAML.

    Values of a disabled limit are +-inf. Soft limits follow SoftJointLimits:
    they may only narrow the hard position range; k_position is kept for the
    round trip but the gate clamps to the soft bounds instead of using a spring.
    ``extra`` holds ros2_control keys the gate does not use (deceleration, jerk,
    angle_wraps, k_velocity) so that to_dict() writes them back.
    """

    has_position_limits: bool = False
    min_position: float = -_INF
    max_position: float = _INF
    has_velocity_limits: bool = False
    max_velocity: float = _INF
    has_acceleration_limits: bool = False
    max_acceleration: float = _INF
    has_effort_limits: bool = False
    max_effort: float = _INF
    has_soft_limits: bool = False
    k_position: float | None = None
    soft_lower_limit: float | None = None
    soft_upper_limit: float | None = None
    extra: dict = dataclasses.field(default_factory=dict)

    @property
    def has_any_limits(self):
        """Return True if at least one limit bounds this joint."""
        return (self.has_position_limits or self.has_velocity_limits
                or self.has_acceleration_limits or self.has_effort_limits
                or self.has_soft_limits)

    def to_dict(self):
        """Return the ros2_control YAML mapping of this joint."""
        out = {}
        for flag, keys in (('has_position_limits', ('min_position', 'max_position')),
                           ('has_velocity_limits', ('max_velocity',)),
                           ('has_acceleration_limits', ('max_acceleration',)),
                           ('has_effort_limits', ('max_effort',))):
            out[flag] = bool(getattr(self, flag))
            if out[flag]:
                out.update({k: float(getattr(self, k)) for k in keys})
        if self.has_soft_limits:
            out['has_soft_limits'] = True
            out['soft_lower_limit'] = float(self.soft_lower_limit)
            out['soft_upper_limit'] = float(self.soft_upper_limit)
        if self.k_position is not None:
            out['k_position'] = float(self.k_position)
        out.update(self.extra)
        return out


@dataclasses.dataclass(frozen=True, eq=False)
class LimitSet:
    """
    Limits of an ordered list of joints, as read-only float64 arrays of shape [J].

    pos_lo/pos_hi are the hard position range narrowed by soft limits (+-inf where
    none); vel_max, acc_max and eff_max are +inf where a joint has no such limit.
    ``warnings`` lists soft limits that were wider than the hard ones and clipped.
    """

    joint_names: tuple
    joints: tuple
    pos_lo: np.ndarray
    pos_hi: np.ndarray
    vel_max: np.ndarray
    acc_max: np.ndarray
    eff_max: np.ndarray
    warnings: tuple = ()

    @classmethod
    def from_joints(cls, joint_names, joints, source='<dict>'):
        """Vectorise per-joint limits; raise LimitsError if soft and hard ranges are disjoint."""
        lo, hi, warnings = [], [], []
        for name, jl in zip(joint_names, joints):
            j_lo, j_hi = jl.min_position, jl.max_position
            if jl.has_soft_limits:
                # SoftJointLimits may only narrow the hard range: a wider soft bound is
                # a config slip, so the hard one wins rather than loosening the gate.
                for key, soft, hard in (('soft_lower_limit', jl.soft_lower_limit, j_lo),
                                        ('soft_upper_limit', jl.soft_upper_limit, j_hi)):
                    if not j_lo <= soft <= j_hi:
                        warnings.append(f"{source}: joint '{name}', key '{key}': {soft} is "
                                        f'outside the hard range [{j_lo}, {j_hi}]; clipped')
                j_lo = max(j_lo, jl.soft_lower_limit)
                j_hi = min(j_hi, jl.soft_upper_limit)
                if j_lo >= j_hi:
                    raise LimitsError(
                        f"{source}: joint '{name}', key 'soft_lower_limit': soft range "
                        f'[{jl.soft_lower_limit}, {jl.soft_upper_limit}] does not overlap '
                        f'the hard range [{jl.min_position}, {jl.max_position}]')
            lo.append(j_lo)
            hi.append(j_hi)

        def arr(values):
            a = np.array(values, dtype=np.float64).reshape(len(joint_names))
            a.flags.writeable = False  # shared with every gate; nobody may loosen it
            return a

        return cls(tuple(joint_names), tuple(joints), arr(lo), arr(hi),
                   arr([j.max_velocity for j in joints]),
                   arr([j.max_acceleration for j in joints]),
                   arr([j.max_effort for j in joints]), tuple(warnings))

    def __len__(self):
        """Return the number of joints."""
        return len(self.joint_names)

    def to_dict(self):
        """Return the ros2_control form ``{'joint_limits': {joint: {...}}}``."""
        return {'joint_limits': {n: j.to_dict() for n, j in zip(self.joint_names, self.joints)}}


def load_joint_limits(source, joint_names, allow_unlimited=False):
    """
    Load limits for ``joint_names`` (in that order) from a dict or YAML file path.

    Accepted forms: ``{'joint_limits': {joint: {...}}}``, the inner mapping alone,
    or either nested under ``node_name: ros__parameters:``. Joints in the source
    but not in ``joint_names`` are ignored. Raise LimitsError naming file, joint
    and key on any malformed entry, on a missing joint or on a joint without any
    limit (the last two are allowed, as unlimited joints, with allow_unlimited).
    """
    name, data = _read(source)
    table = _unwrap(name, data)
    names = list(joint_names)
    if not names:
        raise LimitsError(f'{name}: joint_names is empty')
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise LimitsError(f'{name}: duplicate joint names {dupes}')
    joints = []
    for joint in names:
        if joint not in table:
            if not allow_unlimited:
                raise LimitsError(f"{name}: joint '{joint}' has no entry under joint_limits "
                                  f'(known: {sorted(map(str, table))})')
            joints.append(JointLimits())
            continue
        jl = JointLimits(**parse_joint(f"{name}: joint '{joint}'", table[joint]))
        if not jl.has_any_limits and not allow_unlimited:
            raise LimitsError(f"{name}: joint '{joint}' has no limits (every has_*_limits "
                              'is false or absent)')
        joints.append(jl)
    return LimitSet.from_joints(names, joints, name)


class _LimitsLoader(yaml.SafeLoader):
    """SafeLoader that reads the ``!degrees`` tag of vendors' limit files (value in radians)."""


def _degrees(loader, node):
    value = loader.construct_scalar(node)
    try:
        return math.radians(float(value))
    except ValueError:
        raise yaml.constructor.ConstructorError(
            None, None, f'!degrees needs a number, got {value!r}', node.start_mark) from None


_LimitsLoader.add_constructor('!degrees', _degrees)


def _read(source):
    if isinstance(source, dict):
        return '<dict>', source
    if not isinstance(source, (str, os.PathLike)):
        raise LimitsError(f'joint limits source must be a dict or a path, got '
                          f'{type(source).__name__}')
    path = os.fspath(source)
    try:
        if path.endswith('.urdf'):
            from unilab_safety.urdf_limits import urdf_joint_limits
            return path, urdf_joint_limits(path)
        with open(path, encoding='utf-8') as f:
            return path, yaml.load(f, Loader=_LimitsLoader)  # noqa: S506 - a SafeLoader
    except OSError as e:
        raise LimitsError(f'{path}: cannot read: {e.strerror}') from e
    except yaml.YAMLError as e:
        raise LimitsError(yaml_error(path, e)) from e


def _unwrap(name, data):
    if not isinstance(data, dict):
        raise LimitsError(f'{name}: expected a mapping at top level, got {type(data).__name__}')
    if 'joint_limits' not in data:
        params = [v['ros__parameters'] for v in data.values()
                  if isinstance(v, dict) and isinstance(v.get('ros__parameters'), dict)]
        if params:
            found = [p for p in params if 'joint_limits' in p]
            if len(found) != 1:
                raise LimitsError(f'{name}: expected one node with ros__parameters.joint_limits,'
                                  f' found {len(found)}')
            data = found[0]
    table = data.get('joint_limits', data)
    if not isinstance(table, dict):
        raise LimitsError(f"{name}: key 'joint_limits' must be a mapping of joints, got "
                          f'{type(table).__name__}')
    return table
