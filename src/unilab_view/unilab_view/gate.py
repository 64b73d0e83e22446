# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The safety gate's state as the page shows it, from its ``/diagnostics`` status (no ROS).

The gate publishes its counters as key/value pairs (``unilab_safety.safety_node``):
``armed``, ``estopped``, ``passed``, ``clamped``, ``rejected``, ``fallbacks``.
Between two statuses the page shows what changed: a clamp or a refusal in the
last period is an intervention and turns the panel amber; an e-stop or an error
level turns it red; disarmed is grey; armed and passing is green.
"""

from __future__ import annotations

from dataclasses import dataclass

#: panel colour per state (CSS)
COLOURS = {'armed': '#2e7d32', 'intervening': '#f9a825', 'disarmed': '#757575',
           'estop': '#c62828', 'unknown': '#455a64'}
#: diagnostic levels (diagnostic_msgs/DiagnosticStatus)
ERROR = 2


def _number(values: dict, key: str) -> float:
    try:
        return float(values.get(key, 0))
    except (TypeError, ValueError):
        return 0.0


@dataclass
class GateState:
    """What the gate did, as of its last status."""

    state: str = 'unknown'  #: armed, intervening, disarmed, estop or unknown
    armed: bool = False
    estopped: bool = False
    clamped_share: float = 0.0  #: of the rows in the last period
    refused: int = 0  #: rows rejected since start
    message: str = 'no status from the gate yet'

    @property
    def colour(self) -> str:
        """Return the panel's CSS colour."""
        return COLOURS[self.state]

    @property
    def mode(self) -> str:
        """Return what the operator set or the gate latched: armed (intervening or not), ..."""
        return {'intervening': 'armed', 'unknown': 'no status'}.get(self.state, self.state)


def is_gate_status(values: dict) -> bool:
    """Return whether a status's values are the gate's (it alone reports ``armed``)."""
    return 'armed' in values and 'clamped' in values


def gate_state(level: int, message: str, values: dict, before: dict | None) -> GateState:
    """Return the gate's state from one status and the values of the one before."""
    before = before or {}
    rows = sum(_number(values, k) - _number(before, k) for k in ('passed', 'clamped', 'rejected'))
    clamped = _number(values, 'clamped') - _number(before, 'clamped')
    rejected = _number(values, 'rejected') - _number(before, 'rejected')
    armed = values.get('armed') in ('True', 'true', '1', True, 1)
    estopped = values.get('estopped') in ('True', 'true', '1', True, 1)
    share = clamped / rows if rows > 0 else 0.0
    if estopped or level >= ERROR:
        state = 'estop'
    elif not armed:
        state = 'disarmed'
    elif clamped > 0 or rejected > 0:
        state = 'intervening'
    else:
        state = 'armed'
    return GateState(state=state, armed=armed, estopped=estopped, clamped_share=share,
                     refused=int(_number(values, 'rejected')), message=message)
