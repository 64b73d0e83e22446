# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Named robot variants: disturbance sets (the ``disturbances`` config section) a robot is.

``REAL_VARIANT`` is the held-out "real" robot of ``unilab bench sim2real`` and
of the robot double's ``--variant real``: dynamics and imperfections no
training run used, so a policy that survives it was not fitted to it.
"""

from typing import NamedTuple

# The held-out "real" robot: masses +25-30% (trained up to +20%), friction x0.3-0.4 (trained
# 0.5-1.25), IMU bias walk 100x the ADIS16448's, 1% packet loss, command delay 1-3 steps
# (inside the randomised training range 0-3: covering the robot's delays is the method).
# Encoder noise is off (not part of this robot's description).
REAL_VARIANT = {
    'enabled': True,
    'imu': {'gyro_random_walk': 4e-4, 'accel_random_walk': 2e-3},
    'encoder': {'enabled': False},
    'actuator': {'delay_steps': [1, 3], 'kp_scale': [1.0, 1.0], 'kd_scale': [1.0, 1.0]},
    'network': {'action_drop_prob': 0.01, 'observation_drop_prob': 0.01,
                'observation_delay_steps': [0, 0]},
    'dynamics': {'mass_scale': [1.25, 1.3], 'friction_scale': [0.3, 0.4],
                 'damping_scale': [1.0, 1.0], 'push_interval_s': 0.0},
    'camera': {'enabled': False},
}

# A robot carrying a payload it was not trained for, on a slippery mount, with a slow bus:
# link masses x3, servo stiffness and damping x0.3 (the arm sags under the load), friction
# x0.25, command delay 2-3 steps. The default run's nominal-trained policy reaches about half
# of its goals (final distance < 5 cm): the shift online adaptation (``unilab adapt``) is for.
PAYLOAD_VARIANT = {
    **REAL_VARIANT,
    'actuator': {'delay_steps': [2, 3], 'kp_scale': [0.3, 0.3], 'kd_scale': [0.3, 0.3]},
    'dynamics': {'mass_scale': [3.0, 3.0], 'friction_scale': [0.25, 0.25],
                 'damping_scale': [1.0, 1.0], 'push_interval_s': 0.0},
}

#: Variants by name (``unilab robot-sim --variant NAME``); ``nominal`` is the model as is.
VARIANTS = {'nominal': None, 'real': REAL_VARIANT, 'payload': PAYLOAD_VARIANT}


class LeggedVariant(NamedTuple):
    """
    One legged robot double (``unilab_bridge.legged_double``): the robot it stands in for.

    Not a disturbance set: the legged double is its own simulation, not the training task.
    """

    #: Floor friction (sliding coefficient of every floor contact); None = the model's.
    friction: float | None
    #: Command latency (s): drawn per start uniformly in [lo, hi] from the seed.
    latency_s: tuple[float, float]
    #: Share of each motor's torque limit the motors deliver (1 = the model's).
    motor_strength: float
    #: Extra mass on the trunk (kg), at the trunk's centre of mass.
    payload_kg: float


#: Legged doubles by name (``unilab robot-sim --robot go2 --variant NAME``). Sources:
#: friction 0.8 is mujoco_menagerie unitree_go2's foot friction (go2.xml cites it);
#: 0.3 (slippery) is an ASSUMPTION, about wet tiles or a polished floor; latency 5-20 ms is
#: the delay deployers report on a Go2 (bus, driver period, the policy's own computation;
#: DESIGN.md and unilab_core.actuator's 0-20 ms, less the 0-5 ms a fast loop avoids);
#: motor strength 0.95 and a 1 kg payload are ASSUMPTIONS (a warm motor, a battery / sensor
#: head heavier than the URDF), small enough that a trained policy must tolerate them.
LEGGED_VARIANTS = {
    'nominal': LeggedVariant(None, (0.0, 0.0), 1.0, 0.0),
    'real': LeggedVariant(0.8, (0.005, 0.020), 0.95, 1.0),
    'slippery': LeggedVariant(0.3, (0.005, 0.020), 0.95, 1.0),
}
