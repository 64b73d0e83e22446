# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Joint limits from a URDF's ``<limit>`` tags, in ros2_control's joint_limits vocabulary.

URDF (http://wiki.ros.org/urdf/XML/joint): ``<limit lower upper effort
velocity/>`` on revolute and prismatic joints (lower/upper are required there,
and meaningless for continuous joints); ``<safety_controller soft_lower_limit
soft_upper_limit/>`` narrows the range. ros2_control's
``joint_limits::getJointLimits(urdf)`` reads the same tags the same way.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from unilab_safety.limits_parse import LimitsError


def urdf_joint_limits(path: str) -> dict:
    """Return ``{'joint_limits': {joint: {...}}}`` for every limited joint of a URDF file."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise LimitsError(f'{path}: cannot read the URDF: {exc}') from None
    table = {}
    for joint in root.iter('joint'):
        name, kind = joint.get('name'), joint.get('type')
        limit = joint.find('limit')
        if not name or limit is None or kind not in ('revolute', 'prismatic', 'continuous'):
            continue
        entry = {}
        try:
            if kind != 'continuous' and limit.get('lower') is not None:
                entry.update(has_position_limits=True, min_position=float(limit.get('lower')),
                             max_position=float(limit.get('upper')))
            if limit.get('velocity') is not None:
                entry.update(has_velocity_limits=True,
                             max_velocity=float(limit.get('velocity')))
            if limit.get('effort') is not None:
                entry.update(has_effort_limits=True, max_effort=float(limit.get('effort')))
            soft = joint.find('safety_controller')
            if soft is not None and soft.get('soft_lower_limit') is not None:
                entry.update(has_soft_limits=True,
                             soft_lower_limit=float(soft.get('soft_lower_limit')),
                             soft_upper_limit=float(soft.get('soft_upper_limit')))
        except (TypeError, ValueError) as exc:
            raise LimitsError(f"{path}: joint '{name}': bad <limit> value ({exc})") from None
        table[name] = entry
    return {'joint_limits': table}
