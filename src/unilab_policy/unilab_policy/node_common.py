# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Parameters and model construction shared by the policy and trainer nodes."""

from __future__ import annotations

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
import torch
from unilab_core.config import GpuSection, ModelSection, NormalizationSection
from unilab_core.ros.params import declare_section

from unilab_policy.device import resolve_device
from unilab_policy.history import policy_input_dim
from unilab_policy.models import make_actor_critic, PolicyBundle
from unilab_policy.normalizer import EmpiricalNormalization

#: Weights are latched: a policy that starts (or restarts) late still gets
#: the current version without waiting for the next update.
WEIGHTS_QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                         reliability=ReliabilityPolicy.RELIABLE)


def reserve_device_memory(node: Node, device: torch.device, ratio: float) -> None:
    """
    Pre-reserve ``ratio`` of the free device memory in torch's caching allocator.

    One allocation of that size, freed at once, stays cached by the allocator,
    so later rollout/update tensors do not hit cudaMalloc mid-training.
    """
    free, total = torch.cuda.mem_get_info(device)
    nbytes = int(free * ratio)
    block = torch.empty(nbytes, dtype=torch.uint8, device=device)
    del block
    node.get_logger().info(f'reserved {nbytes / 2**30:.2f} GiB of {total / 2**30:.2f} GiB on '
                           f'{device} (gpu.memory_pool_ratio={ratio})')


class PolicySetup:
    """Declared parameters and the model they describe."""

    def __init__(self, node: Node, reserve_memory: bool = False):
        p = node.declare_parameter
        self.obs_dim = p('obs_dim', 0).value
        self.act_dim = p('act_dim', 0).value
        self.seed = p('seed', 0).value
        self.device_name = p('device', 'auto').value
        self.torch_threads = p('torch_threads', 1).value
        self.model = declare_section(node, 'model', ModelSection)
        self.norm = declare_section(node, 'normalization', NormalizationSection)
        self.gpu = declare_section(node, 'gpu', GpuSection)
        # The network also sees the policy's last model.action_history actions.
        self.input_dim = policy_input_dim(self.obs_dim, self.act_dim, self.model.action_history)
        self.device = resolve_device(self.device_name)
        if self.device.type == 'cpu':
            torch.set_num_threads(self.torch_threads)
            if reserve_memory:
                node.get_logger().info('gpu.memory_pool_ratio skipped: device is CPU')
        elif reserve_memory:
            # One node per process reserves (the trainer): it owns the big tensors.
            reserve_device_memory(node, self.device, self.gpu.memory_pool_ratio)

    def build(self) -> PolicyBundle:
        """Create the actor-critic + normaliser bundle on the device (seeded)."""
        torch.manual_seed(self.seed)
        ac = make_actor_critic(self.input_dim, self.act_dim, self.model)
        norm = EmpiricalNormalization(self.input_dim, clip=self.norm.clip)
        return PolicyBundle(ac, norm).to(self.device)
