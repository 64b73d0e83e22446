# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Batched policy inference with an optional CUDA-graph-captured forward pass.

The forward pass (normalise -> actor mean, critic value) is a fixed kernel
sequence on fixed shapes, so on CUDA it is captured once in a CUDA graph and
replayed every step (torch.cuda.graphs; one launch instead of dozens). The
graph reads the parameters' storage, so weights swapped in place with
``weights.unflatten_into`` between steps are picked up without re-capture.
Sampling stays outside the graph. On CPU the same code runs eagerly.
"""

from __future__ import annotations

import math
from typing import Callable

import numpy as np
import torch

from unilab_policy.models import ActOutput, PolicyBundle

_LOG_SQRT_2PI = 0.5 * math.log(2.0 * math.pi)


class InferencePolicy:
    """Act on ``[N, obs]`` numpy batches with a policy bundle on its device."""

    def __init__(self, bundle: PolicyBundle, num_envs: int, device: torch.device,
                 graph_capture: bool = False, log: Callable[[str], None] = print):
        self.bundle = bundle
        self.device = device
        self.static_obs = torch.zeros(num_envs, bundle.actor_critic.obs_dim, device=device)
        self._zeros = torch.zeros(num_envs, device=device)
        self.graph = None
        if graph_capture and device.type == 'cuda':
            self._capture()
            log(f'policy forward captured in a CUDA graph ({num_envs} envs)')
        elif graph_capture:
            log(f'graph_capture skipped: device is {device.type}, CUDA graphs need CUDA')

    def _forward(self) -> tuple[torch.Tensor, torch.Tensor]:
        ac = self.bundle.actor_critic
        nobs = self.bundle.normalize(self.static_obs)
        return ac.actor(nobs), ac.critic(nobs).squeeze(-1)

    def _capture(self) -> None:
        # Warm up on a side stream (allocations, cuBLAS handles) before capture, as the
        # torch.cuda.graphs documentation prescribes.
        side = torch.cuda.Stream(self.device)
        side.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(side), torch.no_grad():
            for _ in range(3):
                self._forward()
        torch.cuda.current_stream(self.device).wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(self.graph):
            self.static_mean, self.static_value = self._forward()

    def act(self, obs: np.ndarray, deterministic: bool = False) -> ActOutput:
        """
        Sample actions (or take the mean); return action, log-prob, value, mean and std.

        All outputs are on the device. ``deterministic`` acts with the policy
        mean (deployment) and draws no random numbers; without a CUDA graph it
        runs the actor only (value and log-prob zeros).
        """
        # A private copy: published arrays are read-only, which torch.from_numpy warns about.
        x = torch.from_numpy(np.array(obs, dtype=np.float32))
        with torch.inference_mode():
            if deterministic and self.graph is None:
                # Deployment: the mean action only, the exported model's function
                # (PolicyBundle.forward); no critic, no log-density: value and log-prob
                # are zeros, as an exported model's (nothing trains on a deployed
                # policy's outputs). On the control path this is latency, so on a CPU
                # the copy above is the input (one torch op fewer).
                mean = self.bundle(x if self.device.type == 'cpu' else x.to(self.device))
                std = self.bundle.actor_critic.action_std.expand_as(mean)
                return ActOutput(mean, self._zeros, self._zeros, mean, std)
            self.static_obs.copy_(x)
            if self.graph is not None:
                self.graph.replay()
                mean, value = self.static_mean.clone(), self.static_value.clone()
            else:
                mean, value = self._forward()
            std = self.bundle.actor_critic.action_std.expand_as(mean)
            action = mean if deterministic else mean + std * torch.randn_like(mean)
            # Diagonal Gaussian log-density, summed over action dims:
            # log p(a) = sum_i -(a_i - mu_i)^2 / (2 s_i^2) - log s_i - log sqrt(2 pi)
            log_prob = (-((action - mean) ** 2) / (2.0 * std ** 2) - std.log()
                        - _LOG_SQRT_2PI).sum(-1)
        return ActOutput(action, log_prob, value, mean, std)
