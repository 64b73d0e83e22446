# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Topic names of the training graph (one place, so nodes and tests agree).

Every name is a default; ROS remapping (``-r from:=to``) changes it per node.
"""

#: sensor_msgs/JointState, all envs in one message, names ``env<i>/<joint>``.
JOINT_STATES = '/joint_states'
#: TensorBatch "task_state": task extras, reward, terminated, truncated.
TASK_STATE = '/unilab/task_state'
#: TensorBatch "observation": policy observation [N, obs] plus step outcome.
OBSERVATION = '/unilab/observation'
#: TensorBatch "action": raw policy action [N, act] (command units).
ACTION = '/unilab/action'
#: TensorBatch "command": the safety gate's output, the only actuator input.
SAFE_COMMAND = '/unilab/safe_command'
#: TensorBatch "rollout": K steps of transitions for the trainer.
ROLLOUT = '/unilab/rollout'
#: TensorBatch "weights": flat policy parameters, versioned, latched.
WEIGHTS = '/unilab/weights'
#: rosgraph_msgs/Clock with simulated time.
CLOCK = '/clock'
#: diagnostic_msgs/DiagnosticArray.
DIAGNOSTICS = '/diagnostics'
#: sensor_msgs/Imu from the bridge (or an IMU driver): one message per env and step, all with
#: the step's sim stamp; ``header.frame_id`` is ``env<i>/imu`` (the env index is the prefix).
IMU = '/imu'
#: sensor_msgs/PointCloud2, Velodyne XYZIRT layout (x, y, z, intensity float32, ring uint16,
#: time float32; packed, point_step 22), unorganised (height 1), in the sensor frame; one
#: message per env and step, ``header.frame_id`` ``env<i>/lidar``.
POINTS = '/points'
#: sensor_msgs/Image rgb8 from the bridge's camera, one per env, frame ``env<i>/camera``.
IMAGE = '/camera/image_raw'

#: The training graph's own names for the two topics a robot's computer already has: a
#: driver's ``joint_state_broadcaster`` publishes ``/joint_states`` and every ``use_sim_time``
#: node listens on ``/clock``. Training remaps both here (every node of its graph, every
#: starter), so a simulation started beside a robot, on the same ROS domain, never feeds
#: the robot's nodes simulated joints or simulated time. Graphs that talk to a robot
#: (deploy, adapt, the robot double) keep the standard names.
SIM_JOINT_STATES = '/unilab/sim/joint_states'
#: rosgraph_msgs/Clock of the training graph (rclpy's TimeSource follows the remap).
SIM_CLOCK = '/unilab/sim/clock'
#: The training graph's remappings, ``{standard name: training name}``.
SIM_REMAPS = {JOINT_STATES: SIM_JOINT_STATES, CLOCK: SIM_CLOCK}
#: std_msgs/String, transient local: the simulated robot's URDF, which the bridge latches
#: for a live view (``unilab view --training``). Under the same prefix: a robot's
#: computer has ``/robot_description`` from its robot_state_publisher.
SIM_ROBOT_DESCRIPTION = '/unilab/sim/robot_description'
#: For a live view of training (``unilab view --training``), one env's goal and command, at
#: most ``VIEW_RATE_HZ`` and only while someone listens (the bridge; env ``0``):
#: geometry_msgs/PoseStamped in the task's workspace frame ...
SIM_GOAL_POSE = '/unilab/sim/goal_pose'
#: ... and std_msgs/Float64MultiArray, the command the env was stepped with, in the task's
#: joint order (the joint order of the URDF on ``SIM_ROBOT_DESCRIPTION``).
SIM_COMMAND = '/unilab/sim/command'
#: ... and sensor_msgs/JointState of every env (as ``SIM_JOINT_STATES``), for a viewer: the
#: bridge builds ``SIM_JOINT_STATES``' JointState every step while anyone reads it.
SIM_VIEW_JOINT_STATES = '/unilab/sim/view/joint_states'
#: Rate of the three topics above (a screen's).
VIEW_RATE_HZ = 20.0

ALL = {
    'joint_states': JOINT_STATES, 'task_state': TASK_STATE, 'observation': OBSERVATION,
    'action': ACTION, 'safe_command': SAFE_COMMAND, 'rollout': ROLLOUT,
    'weights': WEIGHTS, 'clock': CLOCK, 'diagnostics': DIAGNOSTICS,
    'imu': IMU, 'points': POINTS, 'image': IMAGE,
}
