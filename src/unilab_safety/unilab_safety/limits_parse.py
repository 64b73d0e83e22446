# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Validation of one joint's ros2_control joint_limits entry."""

import difflib
import math

# Each has_* flag and the values it switches on, as in ros2_control's joint_limits.
FLAGS = {
    'has_position_limits': ('min_position', 'max_position'),
    'has_velocity_limits': ('max_velocity',),
    'has_acceleration_limits': ('max_acceleration',),
    'has_effort_limits': ('max_effort',),
    'has_soft_limits': ('soft_lower_limit', 'soft_upper_limit'),
    'has_deceleration_limits': ('max_deceleration',),
    'has_jerk_limits': ('max_jerk',),
}
# Valid ros2_control keys the gate does not enforce; kept only for the round trip.
EXTRA_KEYS = ('has_deceleration_limits', 'max_deceleration', 'has_jerk_limits', 'max_jerk',
              'angle_wraps', 'k_velocity')
NON_NEGATIVE = ('max_velocity', 'max_acceleration', 'max_effort', 'max_deceleration',
                'max_jerk', 'k_position', 'k_velocity')
BOOL_KEYS = tuple(FLAGS) + ('angle_wraps',)
NUMBER_KEYS = tuple(k for keys in FLAGS.values() for k in keys) + ('k_position', 'k_velocity')
KNOWN_KEYS = BOOL_KEYS + NUMBER_KEYS


class LimitsError(ValueError):
    """A joint limits source is malformed; the message names file, joint and key."""


def parse_joint(where, spec):
    """
    Check one joint's mapping and return keyword arguments for JointLimits.

    ``where`` prefixes every error message (file and joint). A value given while
    its has_* flag is absent turns the flag on: a limit written down is enforced.
    A value whose flag is explicitly false is ignored, as ros2_control does.
    """
    if not isinstance(spec, dict):
        raise LimitsError(f'{where}: expected a mapping of limit keys, got '
                          f'{type(spec).__name__}')
    for key, value in spec.items():
        _check_key(where, key, value)
    out = {'extra': {k: spec[k] for k in EXTRA_KEYS if k in spec}}
    if 'k_position' in spec:
        out['k_position'] = float(spec['k_position'])
    for flag, keys in FLAGS.items():
        given = [k for k in keys if k in spec]
        enabled = spec.get(flag, bool(given))
        if not enabled:
            continue
        missing = [k for k in keys if k not in spec]
        if missing:
            why = 'is true' if flag in spec else f'is implied by {given[0]}'
            raise LimitsError(f"{where}, key '{missing[0]}': missing ({flag} {why})")
        if flag not in EXTRA_KEYS:
            out[flag] = True
            out.update({k: float(spec[k]) for k in keys})
    _check_ranges(where, out)
    return out


def _check_key(where, key, value):
    if key not in KNOWN_KEYS:
        close = difflib.get_close_matches(str(key), KNOWN_KEYS, n=1)
        hint = f" (did you mean '{close[0]}'?)" if close else ''
        raise LimitsError(f"{where}, key '{key}': unknown key{hint}")
    if key in BOOL_KEYS:
        if not isinstance(value, bool):
            raise LimitsError(f"{where}, key '{key}': expected true/false, got "
                              f'{type(value).__name__} {value!r}')
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        # PyYAML follows YAML 1.1, which reads 1e3 (no dot) as a string.
        hint = ' (write 1.0e3, not 1e3)' if isinstance(value, str) else ''
        raise LimitsError(f"{where}, key '{key}': expected a number, got "
                          f'{type(value).__name__} {value!r}{hint}')
    if math.isnan(value):
        raise LimitsError(f"{where}, key '{key}': NaN is not a limit")
    if key in NON_NEGATIVE and value < 0:
        raise LimitsError(f"{where}, key '{key}': must be >= 0, got {value}")


def _check_ranges(where, out):
    for lo_key, hi_key in (('min_position', 'max_position'),
                           ('soft_lower_limit', 'soft_upper_limit')):
        if lo_key in out and out[lo_key] >= out[hi_key]:
            raise LimitsError(f"{where}, key '{lo_key}': {lo_key} {out[lo_key]} must be < "
                              f'{hi_key} {out[hi_key]}')
