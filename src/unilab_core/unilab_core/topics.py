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

ALL = {
    'joint_states': JOINT_STATES, 'task_state': TASK_STATE, 'observation': OBSERVATION,
    'action': ACTION, 'safe_command': SAFE_COMMAND, 'rollout': ROLLOUT,
    'weights': WEIGHTS, 'clock': CLOCK, 'diagnostics': DIAGNOSTICS,
}
