# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
arm6_reach: move the end-effector of a 6-joint arm to a random target position.

``Arm6Reach`` is the reach task of any fixed-base arm: a subclass names its model
(``ASSET``), joint speed limit, home pose, workspace box and target sampler
(``ur5e_reach.py``); the reward, the episode logic and the observation are this file's.
"""

import itertools
import pathlib

import mujoco
from mujoco.batch import Batch
import numpy as np

from unilab_bridge.sensors import ImuSensor, set_sensors_enabled
from unilab_bridge.tasks.base import EpisodeCounter, StepState
from unilab_bridge.tasks.joint_limits import actuated_joints, joint_limits_from_model
from unilab_bridge.tasks.mj_batch import MjBatch
from unilab_bridge.tasks.mj_task import MjTask
from unilab_bridge.tasks.model_cache import load_model
from unilab_bridge.tasks.reach_reward import combine, reach_terms, REWARD_SCALES
from unilab_core.graph import Workspace

ASSET = pathlib.Path(__file__).resolve().parents[1] / 'assets' / 'arm6.xml'

# UR5e-like joint speed limit (rad/s); the MJCF has no notion of it.
MAX_JOINT_VELOCITY = 3.14

# Targets are the end-effector positions of random configurations drawn from these joint
# boxes (the wrist stays at zero), so every target is reachable by construction.
TARGET_Q_LOW = np.array([-1.4, -0.4, -0.6, -0.8, 0.0, 0.0])
TARGET_Q_HIGH = np.array([1.4, 1.2, 1.6, 0.8, 0.0, 0.0])
# Keep targets clear of the floor and of the pedestal.
TARGET_MIN_HEIGHT = 0.15
TARGET_MIN_RADIUS = 0.25

#: The workspace box is the targets' range padded by this much (m): a goal a little off
#: the sampled targets is still one the policy has seen the like of.
WORKSPACE_PAD = 0.05
#: Grid points per varying joint when the workspace box is derived from TARGET_Q_*.
WORKSPACE_GRID = 9

EXTRAS_DIM = 9  # ee_pos (3), target_pos (3), target - ee (3)

# The policy acts in joint position targets around the measured position (docs/actions.md):
# one unit of action is this many slew limits (max_velocity * control period), so the
# exploration noise of a fresh policy (std 0.5) moves the target about one slew step, and a
# servo with the arm's gains needs about two to three slew steps of lead for full speed.
ACTION_SCALE_SLEW_STEPS = 2.0


def target_workspace(model, site) -> Workspace:
    """
    Return the box around every target ``sample_targets`` can draw, padded.

    Targets are the tool positions of configurations in TARGET_Q_LOW..HIGH that
    keep clear of the floor and the pedestal; the box is taken over a grid of
    those configurations (WORKSPACE_GRID points per varying joint, extremes
    included) and padded by WORKSPACE_PAD. Frame: the model's world, the
    robot's base.
    """
    data = mujoco.MjData(model)
    axes = [np.linspace(a, b, WORKSPACE_GRID) if b > a else np.array([a])
            for a, b in zip(TARGET_Q_LOW, TARGET_Q_HIGH)]
    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for q in itertools.product(*axes):
        data.qpos[:len(q)] = q
        mujoco.mj_kinematics(model, data)
        pos = data.site_xpos[site]
        if pos[2] >= TARGET_MIN_HEIGHT and np.hypot(pos[0], pos[1]) >= TARGET_MIN_RADIUS:
            np.minimum(lo, pos, out=lo)
            np.maximum(hi, pos, out=hi)
    lo[2] = max(lo[2], TARGET_MIN_HEIGHT)
    return Workspace(tuple(float(v) for v in lo - WORKSPACE_PAD),
                     tuple(float(v) for v in hi + WORKSPACE_PAD))


class Arm6Reach(MjTask):
    """Batched reach task; commands are absolute joint position targets in rad (home = 0)."""

    NAME = 'arm6_reach'
    ASSET = ASSET
    MAX_JOINT_VELOCITY = MAX_JOINT_VELOCITY
    #: Episodes start at HOME plus uniform noise of +-reset_noise on every joint.
    HOME = (0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    #: The task's weights of the smoothness terms (reach_reward.REWARD_SCALES holds the rest):
    #: a task for a real robot asks for motion the robot's gate passes unclamped.
    ACTION_RATE_SCALE = REWARD_SCALES['action_rate']
    TOOL_SPEED_SCALE = REWARD_SCALES['tool_speed']
    COMMAND_TOOL_SPEED_SCALE = REWARD_SCALES['command_tool_speed']
    LEAD_SCALE = REWARD_SCALES['lead']
    #: Slew steps of lead per unit of relative action (the module's ACTION_SCALE_SLEW_STEPS).
    ACTION_SCALE_SLEW_STEPS = ACTION_SCALE_SLEW_STEPS
    #: |action| is clipped to this before the relative map (0: no clip).
    ACTION_CLIP = 0.0
    #: What a command is: joint position targets (rad); arm6_reach_velocity: velocities.
    COMMAND_INTERFACE = 'position'
    #: Share of episodes that start where the last one left the arm, with a new target
    #: (as a robot goes from goal to goal); the others start at HOME plus noise. 0: every
    #: episode from HOME (arm6).
    CHAINED_GOALS = 0.0

    def __init__(self, num_envs, seed=0, max_episode_steps=100, decimation=4,
                 reset_noise=0.1, reward_scales=None, num_threads=None, auto_reset=True):
        """Load the arm model and allocate ``num_envs`` simulations (call reset() next)."""
        self.name = self.NAME
        self.num_envs = int(num_envs)
        if self.num_envs < 1:
            raise ValueError(f'num_envs must be >= 1, got {num_envs}')
        self.model = self._load_model()
        act_ids, jnt_ids = actuated_joints(self.model)
        self.joint_names = [self.model.joint(j).name for j in jnt_ids]
        self._qpos_adr = self.model.jnt_qposadr[jnt_ids]
        self.actuated_joint_ids = list(jnt_ids)
        self.imu = ImuSensor(self.model)
        set_sensors_enabled([self.model], False)  # see enable_sensors()
        self._batch = MjBatch(
            self.model, self.num_envs, decimation, self._qpos_adr,
            self.model.jnt_dofadr[jnt_ids], [self.model.site('ee_site').id], num_threads)
        self.action_dim = self.model.nu
        self.extras_dim = EXTRAS_DIM
        self.uses_joint_state = True
        self.command_interface = self.COMMAND_INTERFACE
        self.control_dt = float(self.model.opt.timestep * decimation)
        self.max_episode_steps = int(max_episode_steps)
        self.joint_limits = joint_limits_from_model(
            self.model, act_ids, jnt_ids, [self.MAX_JOINT_VELOCITY] * len(jnt_ids))
        self.home = np.asarray(self.HOME, dtype=float)
        self.action_low = self.model.actuator_ctrlrange[:, 0].copy()
        self.action_high = self.model.actuator_ctrlrange[:, 1].copy()
        self.action_mode = 'relative' if self.command_interface == 'position' else 'absolute'
        self.action_scale = () if self.action_mode == 'absolute' else tuple(
            self.ACTION_SCALE_SLEW_STEPS * self.joint_limits[j]['max_velocity'] * self.control_dt
            for j in self.joint_names)
        self.action_clip = 0.0 if self.action_mode == 'absolute' else float(self.ACTION_CLIP)
        self.reset_noise = float(reset_noise)
        self.reward_scales = dict(
            REWARD_SCALES, action_rate=self.ACTION_RATE_SCALE, tool_speed=self.TOOL_SPEED_SCALE,
            command_tool_speed=self.COMMAND_TOOL_SPEED_SCALE, lead=self.LEAD_SCALE,
        ) if reward_scales is None else dict(reward_scales)
        self.reward_terms = {}  # scaled per-term rewards of the last step, for logging

        self._site = self.model.site('ee_site').id
        self._mocap = self.model.body('target').mocapid[0]
        self._fk_data = mujoco.MjData(self.model)
        self._fk = None  # the commands' forward kinematics (``_command_tool_speed``)
        self._workspace = None  # built on first read (the ``workspace`` property)
        self._rng = np.random.default_rng(seed)
        n = self.num_envs
        self._target = np.zeros((n, 3))
        self._prev_cmd = np.zeros((n, self.action_dim))
        self._prev_tool = np.zeros((n, 3))
        self._cmd_tool = np.zeros((n, 3))
        self._prev_cmd_tool = np.zeros((n, 3))
        # auto_reset=False: a robot, not an episode (the robot double): no episode ever ends,
        # no env is reset (nothing teleports), done flags stay False.
        self.auto_reset = bool(auto_reset)
        self._episodes = EpisodeCounter(
            n, self.max_episode_steps if self.auto_reset else None)
        self._batch_steps = 0
        self._was_reset = False

    def _load_model(self):
        """Return the task's compiled model (a variant may change its actuators)."""
        return load_model(self.ASSET)

    def step(self, command):
        """Apply joint position targets [N, 6] for one control step, then auto-reset."""
        if not self._was_reset:
            raise RuntimeError(f'{self.name}: call reset() before step()')
        cmd = self.check_command(command)
        # The lead over the joints the command was sent from (before the step moves them).
        lead = cmd - self._batch.qpos if self.reward_scales.get('lead') else None
        self._batch.step(cmd)
        self._batch_steps += 1
        batch = self._batch
        ee = batch.site_pos[:, 0]
        tool_speed = np.linalg.norm(ee - self._prev_tool, axis=1) / self.control_dt
        terms = reach_terms(ee, self._target, cmd, self._prev_cmd, batch.qvel, tool_speed,
                            self._command_tool_speed(cmd), lead)
        self.reward_terms = {k: self.reward_scales[k] * terms[k] for k in self.reward_scales}
        reward = combine(terms, self.reward_scales)
        self._prev_cmd[:] = cmd
        self._prev_tool[:] = ee
        self._prev_cmd_tool[:] = self._cmd_tool
        # The arm cannot fall or fail; only a diverged simulation ends an episode early.
        terminated = batch.unstable.copy()
        if not self.auto_reset:
            terminated = np.zeros_like(terminated)
        reward[terminated] = 0.0
        truncated, done, ep_return, ep_length = self._episodes.end_step(reward, terminated)
        for i in np.flatnonzero(done):
            if self.CHAINED_GOALS and not terminated[i] and \
                    self._rng.random() < self.CHAINED_GOALS:
                self._next_goal(i)
            else:
                self._reset_env(i)
        return self._state(reward, terminated, truncated, ep_return, ep_length)

    def goal_positions(self):
        """Return every env's target [N, 3] (the model's world frame is ``base_link``)."""
        return self._target

    @property
    def workspace(self) -> Workspace:
        """
        Return the box every goal of this task lies in (``task_workspace``, kept once built).

        Built on first read, not in the constructor: arm6's box takes thousands of forward
        kinematics (tens of ms), which the bridge, stepping the task, never reads; its cold
        start and every ``make_task`` would pay them.
        """
        if self._workspace is None:
            self._workspace = self.task_workspace()
        return self._workspace

    def task_workspace(self) -> Workspace:
        """Return the box every goal of this task lies in (arm6: around its sampler's reach)."""
        return target_workspace(self.model, self._site)

    def sample_targets(self, count):
        """Return [count, 3] reachable target positions (FK of random configurations)."""
        out = np.empty((count, 3))
        data = self._fk_data
        for k in range(count):
            while True:
                data.qpos[:] = self._rng.uniform(TARGET_Q_LOW, TARGET_Q_HIGH)
                mujoco.mj_kinematics(self.model, data)
                pos = data.site_xpos[self._site]
                if pos[2] >= TARGET_MIN_HEIGHT and np.hypot(pos[0], pos[1]) >= TARGET_MIN_RADIUS:
                    out[k] = pos
                    break
        return out

    def _command_tool_speed(self, cmd):
        """
        Return the commanded tool's speed [N] (m/s), or None while its scale is 0.

        Forward kinematics of this and the last command, over one control step: what a
        robot's gate limits (``unilab_safety.tool_speed``); a policy whose commands lead
        the arm passes a limit on the tool's own speed and is clamped on this one.
        """
        if not self.reward_scales.get('command_tool_speed'):
            return None
        if self._fk is None:
            # Every env's kinematics in one call, on the stepping batch's threads; the
            # position stage's site poses are mj_kinematics' (bit for bit).
            self._fk = Batch(self.model, self.num_envs, self._batch.num_threads)
            self._fk.set_models(self.model)
            self._fk.reset(stage=int(mujoco.mjtStage.mjSTAGE_NONE))
            # Bound before the first call: an output bound later reads zeros until the next.
            self._fk_io = (self._fk.bind('qpos'), self._fk.bind('site_xpos'))
        qpos, site_xpos = self._fk_io
        qpos[:, self._qpos_adr] = cmd
        self._fk.forward(stage=int(mujoco.mjtStage.mjSTAGE_POS))
        self._cmd_tool[:] = site_xpos[:, self._site]
        return np.linalg.norm(self._cmd_tool - self._prev_cmd_tool, axis=1) / self.control_dt

    def _reset_env(self, i):
        data = self._batch.env_data(i)
        mujoco.mj_resetData(self._batch.models[i], data)
        q0 = self.home + self._rng.uniform(-self.reset_noise, self.reset_noise, self.action_dim)
        q0 = np.clip(q0, self.action_low, self.action_high)
        data.qpos[self._qpos_adr] = q0
        # Command the start pose (a velocity drive: zero) so the arm holds still until the
        # policy acts.
        data.ctrl[:] = q0 if self.command_interface == 'position' else 0.0
        self._prev_cmd[i] = data.ctrl
        self._target[i] = self.sample_targets(1)[0]
        data.mocap_pos[self._mocap] = self._target[i]
        mujoco.mj_forward(self._batch.models[i], data)
        self._episodes.reset(i)
        self._batch.read_env(i)
        self._prev_tool[i] = self._prev_cmd_tool[i] = self._batch.site_pos[i, 0]

    def _next_goal(self, i):
        """Start env ``i``'s next episode where the arm is: a new target, nothing moved."""
        self._target[i] = self.sample_targets(1)[0]
        self._batch.state_field('mocap_pos')[i, self._mocap] = self._target[i]
        self._episodes.reset(i)

    def _state(self, reward, terminated, truncated, ep_return, ep_length):
        batch = self._batch
        ee = batch.site_pos[:, 0]
        extras = np.concatenate([ee, self._target, self._target - ee], axis=1)
        return StepState(
            joint_position=batch.qpos.copy(),
            joint_velocity=batch.qvel.copy(),
            joint_effort=batch.actuator_force.copy(),
            extras=extras.astype(np.float32),
            reward=np.asarray(reward, dtype=np.float32),
            terminated=np.asarray(terminated, dtype=bool),
            truncated=np.asarray(truncated, dtype=bool),
            episode_return=np.asarray(ep_return, dtype=np.float32),
            episode_length=np.asarray(ep_length, dtype=np.int32),
            sim_time=self._batch_steps * self.control_dt,
        )
