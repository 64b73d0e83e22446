# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab play RUN_DIR``: watch a trained policy in the simulator, as a video.

What rsl_rl's ``play.py`` and rl-zoo's ``enjoy.py`` do, on UniLab's own parts:
the policy is rebuilt from the run directory (``factory.load_trained``), acts
deterministically (``make_actor`` with ``mode: deploy``, the policy mean, its
action history kept as the policy node keeps it) through the safety gate the
graph would build, on one simulated env (``SimLoop``: the graph's step protocol
without ROS), with the nominal model or the held-out ``real`` variant. Every
control step is rendered offscreen (MuJoCo on EGL, ``unilab_bridge.camera``) and
encoded to H.264 MP4 (yuv420p) by the ffmpeg of ``imageio-ffmpeg``, at the
control rate. ``--frames FILE.png`` also writes a strip of frames evenly
spread over the run (for documentation).

The view: a free camera aimed at a fixed-base robot, or following a floating base.
Shadows are off unless asked for (``--shadows``): on a software renderer the shadow
pass costs about ten times the rest of a frame.
"""

from __future__ import annotations

import contextlib
import dataclasses
import pathlib

import numpy as np
from unilab_bridge.tasks import make_task
from unilab_bridge.tasks.reach_reward import final_distance, SUCCESS_M
from unilab_bridge.variants import VARIANTS
from unilab_core.atomic import atomic_path
from unilab_core.config import ConfigError, load_run_config

#: Frames in the ``--frames`` strip.
STRIP_FRAMES = 6


class RenderUnavailable(RuntimeError):
    """Offscreen rendering does not work on this machine (no EGL driver)."""


@dataclasses.dataclass
class PlayOptions:
    """What to play and where to write it."""

    run_dir: str
    episodes: int = 1
    video: str = ''
    frames: str = ''
    variant: str = 'nominal'
    seed: int = 0
    width: int = 640
    height: int = 480
    shadows: bool = False
    #: Options for the task's constructor (``--task-option KEY=VALUE``), e.g. go2_walk's
    #: ``command_schedule``: what the robot is asked to do in the video.
    task_options: dict = dataclasses.field(default_factory=dict)


def _check(opts: PlayOptions) -> None:
    if opts.episodes < 1:
        raise ConfigError(f'--episodes must be >= 1, got {opts.episodes}')
    # H.264 in yuv420p needs even sizes; 16 avoids the encoder's resize (macro blocks).
    for name, v in (('width', opts.width), ('height', opts.height)):
        if v < 16 or v % 16:
            raise ConfigError(f'--size: {name} {v} must be a multiple of 16 (>= 16)')
    for path in (opts.video, opts.frames):
        if path and not pathlib.Path(path).resolve().parent.is_dir():
            raise ConfigError(f'{path}: directory does not exist')


def open_view(sim, width: int, height: int, shadows: bool = False):
    """
    Return an EGL camera on env 0 that frames the robot.

    A floating base is followed; a fixed-base robot is seen from a free camera aimed at
    the centre of its bodies, far enough back to keep its reach in view.
    """
    import mujoco
    from unilab_bridge.camera import EglCamera
    model = sim.model
    off = model.vis.global_
    if width > off.offwidth or height > off.offheight:
        raise ConfigError(f'--size {width}x{height} exceeds the model\'s offscreen buffer '
                          f'{off.offwidth}x{off.offheight}')
    try:
        camera = EglCamera(sim, camera='', size=(height, width), shadows=shadows)
    except Exception as exc:  # noqa: BLE001 - any driver or library failure: no rendering
        raise RenderUnavailable(f'offscreen rendering unavailable ({type(exc).__name__}: '
                                f'{exc}); MuJoCo needs EGL (libEGL, e.g. Mesa)') from None
    if sim.has_root:
        free = np.flatnonzero(model.jnt_type == int(mujoco.mjtJoint.mjJNT_FREE))
        # From behind (+x is forward) and above, so the scene's walls along x (0.8 m) do not
        # come between the camera and a robot walking by them.
        camera.look_at(None, 2.0, azimuth=15.0, elevation=-30.0,
                       track_body=model.body(int(model.jnt_bodyid[free[0]])).name)
    else:
        data = mujoco.MjData(model)  # the model's home pose
        mujoco.mj_kinematics(model, data)
        robot = [b for b in range(1, model.nbody) if model.body_mocapid[b] < 0]
        pos = data.xpos[robot]
        centre = pos.mean(axis=0)
        reach = float(np.linalg.norm(pos - centre, axis=1).max()) + 0.3
        camera.look_at(centre, 2.0 * reach, azimuth=150.0)
    return camera


def play(opts: PlayOptions) -> dict:
    """Run ``opts.episodes`` deterministic episodes, render them; return their figures."""
    _check(opts)
    import imageio_ffmpeg
    from unilab_bringup.direct import make_gate
    from unilab_bringup.sim_loop import SimLoop
    from unilab_policy.networks import load_trained, make_actor
    run_dir = pathlib.Path(opts.run_dir)
    trained = load_trained(run_dir)
    p = trained.params
    params = p.model_copy(update={'mode': 'deploy',
                                  'rollout': p.rollout.model_copy(update={'num_envs': 1})})
    actor = make_actor(params, 'cpu', trained.bundle)
    actor.set_version(0)
    cfg = load_run_config([run_dir / 'config.yaml'])
    gate = make_gate(cfg, run_dir)
    returns, final_dist = [], []
    try:
        task = make_task(p.run.task, 1, seed=opts.seed, disturbances=VARIANTS[opts.variant],
                         **opts.task_options)
    except (TypeError, ValueError) as exc:
        raise ConfigError(f'--task-option for task {p.run.task}: {exc}') from None
    with task:
        sim = getattr(task, 'sim', None)
        if sim is None:
            raise ConfigError(f'task {p.run.task}: not a UniLab MuJoCo task; play renders '
                              'UniLab\'s own tasks only')
        camera = open_view(sim, opts.width, opts.height, opts.shadows)
        expected = opts.episodes * task.max_episode_steps + 1
        stride = max(1, expected // STRIP_FRAMES)
        kept: list[np.ndarray] = []
        stack = contextlib.ExitStack()
        writer = None
        if opts.video:
            # Written beside the file and renamed at the end: a stopped run leaves no
            # half video (the temporary name has no .mp4, hence the explicit format).
            tmp = stack.enter_context(atomic_path(opts.video))
            writer = imageio_ffmpeg.write_frames(
                str(tmp), (opts.width, opts.height), fps=1.0 / task.control_dt,
                codec='libx264', quality=7, macro_block_size=16, ffmpeg_log_level='error',
                output_params=['-f', 'mp4'])
            writer.send(None)  # start the encoder
        frames = 0

        def frame():
            nonlocal frames
            img = camera.render(0)
            if writer is not None:
                writer.send(img)
            if frames % stride == 0:
                kept.append(img)
            frames += 1

        def on_step(state):
            done = state.terminated | state.truncated
            if done[0]:
                returns.append(float(state.episode_return[0]))
                dist = final_distance(task, done)
                if dist is not None:
                    final_dist.append(float(dist[0]))
            frame()

        with stack:
            try:
                loop = SimLoop(task, actor, gate, on_step=on_step)
                loop.reset(seed=opts.seed)
                frame()
                loop.run(until=lambda: len(returns) >= opts.episodes)
            finally:
                if writer is not None:
                    writer.close()
                camera.close()
    if opts.frames:
        _write_strip(opts.frames, kept)
    out = {'run_dir': str(run_dir), 'task': p.run.task, 'variant': opts.variant,
           'episodes': len(returns), 'frames': frames, 'fps': round(1.0 / task.control_dt, 3),
           'returns': [round(r, 3) for r in returns],
           'mean_return': round(float(np.mean(returns)), 3)}
    if final_dist:
        out['final_distance_m'] = [round(d, 4) for d in final_dist]
        out['success'] = round(float(np.mean(np.asarray(final_dist) < SUCCESS_M)), 3)
    if opts.video:
        out['video'] = opts.video
    if opts.frames:
        out['frames_png'] = opts.frames
    return out


def _write_strip(path: str, frames: list[np.ndarray]) -> None:
    """Write up to STRIP_FRAMES frames, evenly spread, side by side (white gaps) as PNG."""
    import imageio.v2 as imageio
    pick = np.linspace(0, len(frames) - 1, min(STRIP_FRAMES, len(frames))).round().astype(int)
    h = frames[0].shape[0]
    gap = np.full((h, 4, 3), 255, np.uint8)
    parts = []
    for i in pick:
        parts += [frames[i], gap]
    with atomic_path(path) as tmp:
        imageio.imwrite(tmp, np.concatenate(parts[:-1], axis=1), format='png')
