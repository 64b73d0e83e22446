# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Adapter node: the robot's rollout chunks in, fine-tuned weight versions out, a fuse between.

Wiring only; the work is ``unilab_adapt.adapter.Adapter``. The node runs in
its own process at a lower priority (``adapt.sched_idle``, ``adapt.nice``) with
few torch threads (``adapt.torch_threads``), and a round (fine-tuning plus the simulation test,
seconds of CPU) runs on a worker thread, so chunks keep arriving meanwhile. Closing
ends a running round at its next pause and waits for it (``CLOSE_WAIT_S``): a round
left running in a daemon thread crashed the process as the interpreter went down.
The policy never waits for it: it acts with whatever weights it has and
swaps versions between two control steps. Every round's decision is logged;
a rollback is an ERROR on ``/diagnostics`` (``NodeDiagnostics``) until
the next deployed version or an operator's ``~/resume``.
"""

from __future__ import annotations

import os
import pathlib
import queue
import threading
import time

import numpy as np
from rclpy.node import Node
from rclpy.qos import QoSProfile
from std_srvs.srv import Trigger
import torch
from unilab_adapt.adapter import Adapter, RoundResult, RoundStopped
from unilab_adapt.finetune import AdaptDataError, ROBOT_REWARD_TASKS
from unilab_adapt.pacer import ControlPacer
from unilab_adapt.params import AdapterNodeParams, RECORDINGS
from unilab_adapt.robot_reward import robot_reward
from unilab_bridge.variants import VARIANTS
from unilab_bringup.evaluation import evaluate_policy
from unilab_core import topics
from unilab_core.config import ConfigError, load_run_config
from unilab_core.ros.diagnostics import NodeDiagnostics
from unilab_core.ros.params import declare_params
from unilab_core.ros.runtime import sched_idle, spin_node
from unilab_core.ros.tensor_msg import Batch
from unilab_core.ros.tensor_topic import (batch_capacity, close_endpoints, TensorPublisher,
                                          TensorSubscription)
from unilab_policy.node_common import WEIGHTS_QOS
from unilab_policy.weights import flatten_state, unflatten_into

#: Closing waits this long for a running round to reach its next pause (a minibatch, a
#: simulation step: milliseconds).
CLOSE_WAIT_S = 5.0


def make_sim_test(cfg, bundle, task_name: str, run_dir, adapt, pause=None):
    """Return ``flat weights -> simulation success``: the fuse's simulation test."""
    import copy

    if adapt.sim_variant not in VARIANTS:
        raise ConfigError(f'adapt.sim_variant `{adapt.sim_variant}`: no such variant '
                          f'({", ".join(VARIANTS)})')
    variant = VARIANTS[adapt.sim_variant]
    work = copy.deepcopy(bundle).cpu()
    _, spec = flatten_state(work)

    def sim_test(flat) -> float:
        unflatten_into(work, torch.from_numpy(np.asarray(flat, np.float32)), spec)
        result = evaluate_policy(cfg, work, task_name, run_dir, variant, adapt.sim_envs,
                                 adapt.sim_seed, adapt.sim_episodes_per_env, pause=pause)
        # A task without a goal (walking) succeeds by surviving its episodes.
        success = result['success']
        return float(result['survival'] if success is None else success)
    return sim_test


def build_adapter(run_dir, model: str, adapt, log=print, pause=None,
                  max_tilt_rad: float | None = None) -> Adapter:
    """
    Return the adapter of a deployment (its run directory's config, the trained policy).

    ``pause`` (``ControlPacer.pause``) runs between the pieces of a round's work;
    ``max_tilt_rad`` is a walking robot's fall-stop bound (None: the default).
    """
    from unilab_bringup.deploy import describe_model
    from unilab_policy.networks import load_trained
    run_dir = pathlib.Path(run_dir)
    cfg = load_run_config([run_dir / 'config.yaml'])
    desc = describe_model(model)
    if desc.task.name not in ROBOT_REWARD_TASKS:
        raise ConfigError(f'adapt: task `{desc.task.name}` has no reward computable on a robot '
                          f'(supported: {", ".join(ROBOT_REWARD_TASKS)})')
    trained = load_trained(model)
    # The network acts as it was trained (its action map), whatever the config says today.
    cfg = cfg.model_copy(update={'model': desc.params.model})
    flat0 = flatten_state(trained.bundle)[0].numpy()
    sim_test = make_sim_test(cfg, trained.bundle, desc.task.name, run_dir, adapt, pause)
    return Adapter(run_dir, trained.bundle, flat0, adapt, cfg.advantage, cfg.policy_update,
                   sim_test, log=log, pause=pause,
                   reward=robot_reward(desc.task.name, desc.task.control_dt, max_tilt_rad))


class AdapterNode(Node):
    """Fine-tune the deployed policy on what the robot did; deploy what the fuse allows."""

    def __init__(self, **kwargs):
        super().__init__('adapter', **kwargs)
        self.params = p = declare_params(self, AdapterNodeParams)
        if p.adapt.nice:
            os.nice(p.adapt.nice)
        self.sched = sched_idle() if p.adapt.sched_idle else f'nice {p.adapt.nice}'
        torch.set_num_threads(p.adapt.torch_threads)
        # The round's work stays out of the control steps (their phase: the chunks' stamps);
        # switched off, the window is empty (and the start line says so).
        before, after = ((p.adapt.yield_before_ms / 1e3, p.adapt.yield_after_ms / 1e3)
                         if p.adapt.yield_to_control else (0.0, 0.0))
        self.pacer = ControlPacer(p.control_rate_hz, before, after)
        self._closing = threading.Event()
        try:
            self.core = build_adapter(p.run_dir, p.model, p.adapt, log=self.get_logger().info,
                                      pause=self._pause,
                                      max_tilt_rad=p.max_tilt_rad or None)
        except (ValueError, OSError) as exc:
            raise ConfigError(f'adapter: {exc}') from None
        self.counters = {'chunks': 0, 'bad_chunks': 0, 'rounds': 0, 'deployed': 0,
                         'rejected': 0, 'rollbacks': 0, 'held_rounds': 0,
                         'failed_rounds': 0, 'inbox_dropped': 0}
        self._results: queue.Queue[RoundResult] = queue.Queue()
        self._lock = threading.Lock()  # the core: the round's worker, the resume service
        # At most a window's worth of chunks (each at least one step) waits for a round.
        self._inbox: queue.Queue = queue.Queue(maxsize=max(64, p.adapt.window_steps))
        self._worker: threading.Thread | None = None
        self._alert = ''
        # After a restart: the window from what the recorder wrote since the last round.
        recordings = pathlib.Path(p.run_dir) / RECORDINGS
        self.replayed = self.core.replay_recordings(recordings, topics.ROLLOUT)
        n = self.core.load_weights(0).size
        self.weights_pub = TensorPublisher(self, topics.WEIGHTS, batch_capacity({'flat': (n,)}),
                                           policy='reliable', slots=4, qos=WEIGHTS_QOS,
                                           timeout_s=60.0, latched=True)
        self.chunk_sub = TensorSubscription(self, topics.ROLLOUT, self._on_chunk,
                                            policy='latest', depth=64,
                                            qos=QoSProfile(depth=64), on_error=self._bad_chunk)
        again = self.core.republish_running()
        if again is not None:
            self._publish(again, 'restart: the running version again')
        self.create_service(Trigger, '~/resume', self._on_resume)
        self.create_timer(p.adapt.period_s, self._start_round)
        self.create_timer(0.1, self._drain)
        self.health = NodeDiagnostics(self, p.health, self._health_counters,
                                      errors=lambda: [self._alert] if self._alert else [])
        f = self.core.fuse
        self.get_logger().info(
            f'adapting: running version {f.running}, last good {f.last_good}, a round every '
            f'{p.adapt.period_s:g} s after {p.adapt.min_episodes} robot episodes; '
            f'scheduling {self.sched}, {self.pacer.describe()}; files in {self.core.dir}')
        r = self.replayed
        if r['bags'] or r['open_bags'] or r['unreadable_bags']:
            self.get_logger().info(
                f'window rebuilt from {r["bags"]} recorded bag(s): {r["chunks"]} chunks, '
                f'{r["steps"]} steps after the last scored round ({r["bad_chunks"]} bad '
                f'chunks, {r["open_bags"]} bag(s) still open, {r["unreadable_bags"]} '
                'unreadable)')

    def _on_resume(self, request, response):
        with self._lock:
            response.message = self.core.resume()
        self._alert = ''
        response.success = True
        self.get_logger().info(response.message)
        return response

    def _bad_chunk(self, exc: Exception) -> None:
        self.counters['bad_chunks'] += 1
        self.get_logger().error(f'dropped rollout chunk: {exc}', throttle_duration_sec=5.0)

    def _on_chunk(self, batch: Batch) -> None:
        self.pacer.observe(batch.stamp_ns)
        # Copies: the batch's arrays may be a shared-memory slot the next chunk reuses. The
        # executor only queues; the round's worker thread owns the adapter's core.
        try:
            self._inbox.put_nowait(({k: np.array(v) for k, v in batch.tensors.items()},
                                    int(batch.version)))
        except queue.Full:  # a round running long, or a flood: bounded, counted, said
            self.counters['inbox_dropped'] += 1
            self.get_logger().warning(
                f'adapter busy: dropped a rollout chunk ({self.counters["inbox_dropped"]} so '
                'far)', throttle_duration_sec=10.0)

    def _pause(self) -> None:
        # Between two pieces of a round's work: stop there when closing, else yield.
        if self._closing.is_set():
            raise RoundStopped('the adapter is closing')
        self.pacer.pause()

    def _start_round(self) -> None:
        if self._closing.is_set():
            return
        if self._worker is not None and self._worker.is_alive():
            return
        self._worker = threading.Thread(target=self._round, daemon=True)
        self._worker.start()

    def _take_inbox(self) -> int:
        """Move the queued chunks into the window; return the wall-clock time (ns) of it."""
        taken_ns = time.time_ns()
        while True:
            try:
                tensors, version = self._inbox.get_nowait()
            except queue.Empty:
                return taken_ns
            try:
                self.core.add_chunk(tensors, version)
                self.counters['chunks'] += 1
            except AdaptDataError as exc:
                self._bad_chunk(exc)

    def _round(self) -> None:
        with self._lock:
            taken_ns = self._take_inbox()
            try:
                result = self.core.step(taken_ns=taken_ns)
            except RoundStopped:
                return
            except Exception as exc:  # noqa: BLE001 - a failed round must not end the node
                result = RoundResult('failed', f'adaptation round failed: '
                                     f'{type(exc).__name__}: {exc}')
        self._results.put(result)

    def _drain(self) -> None:
        while True:
            try:
                r = self._results.get_nowait()
            except queue.Empty:
                return
            log = self.get_logger()
            if r.kind == 'wait':
                log.info(r.reason, throttle_duration_sec=30.0)
                continue
            if r.kind == 'failed':
                self.counters['failed_rounds'] += 1
                log.error(r.reason)
                continue
            self.counters['rounds'] += 1
            key = {'rollback': 'rollbacks', 'deployed': 'deployed', 'rejected': 'rejected',
                   'held': 'held_rounds'}
            if r.kind in key:
                self.counters[key[r.kind]] += 1
            if r.alert:
                self._alert = r.reason
                log.error(r.reason)
            else:
                log.info(r.reason)
            if r.kind == 'deployed':
                self._alert = ''
            if r.publish is not None:
                self._publish(r.publish, r.reason)

    def _publish(self, publish, why: str) -> None:
        msg_version, version, flat = publish
        self.weights_pub.publish('weights', msg_version, {'flat': flat}, msg_version)
        self.get_logger().info(f'published version {version} as weights message '
                               f'{msg_version} ({why})')

    def _health_counters(self) -> dict:
        f = self.core.fuse
        return {**self.counters, 'running_version': f.running, 'last_good': f.last_good,
                'versions': len(f.versions), 'fuse_rollbacks': f.rollbacks,
                'held': int(f.held), 'window_steps': self.core.window.size,
                'window_dropped_steps': self.core.window.dropped_steps,
                'replayed_chunks': self.replayed['chunks'],
                'replayed_bad_chunks': self.replayed['bad_chunks'], **self.pacer.counters()}

    def close(self) -> None:
        """End a running round at its next pause and wait for it (module doc)."""
        closing = getattr(self, '_closing', None)
        if closing is None:   # stopped while being made
            return
        closing.set()
        worker = getattr(self, '_worker', None)
        if worker is not None and worker.is_alive():
            worker.join(CLOSE_WAIT_S)
            if worker.is_alive():
                self.get_logger().error(f'the adaptation round did not stop within '
                                        f'{CLOSE_WAIT_S:g} s; the process may end inside it')
            else:
                self.get_logger().info('closing: the running round was stopped')

    def destroy_node(self):
        """Release transport endpoints (unlink shared memory), then destroy the node."""
        self.close()
        close_endpoints(self)
        if hasattr(self, 'health'):   # not yet there when stopped while being made
            self.health.close()
        return super().destroy_node()


def main(args=None):
    """Run the adapter node alone (its typed parameters say which deployment)."""
    spin_node(AdapterNode, args)
