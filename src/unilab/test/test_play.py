# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``unilab play``: a tiny trained run watched in the simulator, written to an MP4."""

import json

from conftest import cli, cli_here
import numpy as np
import pytest
from unilab.play import play, PlayOptions, RenderUnavailable
from unilab_bringup.direct import train_direct
from unilab_bringup.paths import default_config_files
from unilab_core.config import load_run_config

#: Frame size of the tests: small (software rendering), multiples of 16.
W, H = 64, 48


@pytest.fixture(scope='module')
def tiny_run(tmp_path_factory):
    """Train arm6_reach for 2048 steps with 8 envs (seconds) and return the run dir."""
    run_dir = tmp_path_factory.mktemp('run') / 'arm'
    cfg = load_run_config(list(default_config_files()), {
        'run.total_steps': 2048, 'rollout.num_envs': 8, 'logging.tensorboard': False,
        'logging.progress': False, 'model.hidden_sizes': [32, 32],
        'policy_update.batch_size': 256})
    train_direct(cfg, run_dir)
    return run_dir


def _play(opts):
    try:
        return play(opts)
    except RenderUnavailable as exc:
        pytest.skip(f'offscreen rendering unavailable here: {exc}')


def test_play_writes_a_video_of_each_control_step_and_a_frame_strip(tiny_run, tmp_path):
    import imageio.v2 as imageio
    import imageio_ffmpeg
    video, strip = tmp_path / 'play.mp4', tmp_path / 'frames.png'
    out = _play(PlayOptions(str(tiny_run), episodes=1, video=str(video), frames=str(strip),
                            width=W, height=H))
    # arm6_reach: 100 control steps per episode at 50 Hz, plus the first observation.
    assert out['episodes'] == 1 and out['frames'] == 101 and out['fps'] == 50.0
    assert len(out['returns']) == 1 and 0.0 <= out['success'] <= 1.0
    reader = imageio_ffmpeg.read_frames(str(video))
    meta = next(reader)
    assert meta['codec'] == 'h264' and meta['size'] == (W, H) and meta['fps'] == 50.0
    frames = list(reader)
    assert len(frames) == 101 and len(frames[0]) == W * H * 3
    image = imageio.imread(strip)
    assert image.shape == (H, 6 * W + 5 * 4, 3) and image.std() > 0  # a picture, not a blank
    assert not list(tmp_path.glob('.*.tmp'))  # the atomic writes left no temporary file


def test_play_is_deterministic_and_runs_the_real_variant(tiny_run, tmp_path):
    a = _play(PlayOptions(str(tiny_run), episodes=2, frames=str(tmp_path / 'a.png'),
                          width=W, height=H, seed=3))
    b = _play(PlayOptions(str(tiny_run), episodes=2, frames=str(tmp_path / 'b.png'),
                          width=W, height=H, seed=3))
    assert a['returns'] == b['returns'] and a['episodes'] == 2
    real = _play(PlayOptions(str(tiny_run), episodes=1, frames=str(tmp_path / 'r.png'),
                             width=W, height=H, seed=3, variant='real'))
    assert real['variant'] == 'real' and np.isfinite(real['mean_return'])


def test_play_command_line(tiny_run, tmp_path, capsys):
    video = tmp_path / 'cli.mp4'
    proc = cli('play', tiny_run, '--video', video, '--size', f'{W}x{H}')
    if proc.returncode == 1 and 'offscreen rendering unavailable' in proc.stderr:
        pytest.skip(proc.stderr.strip())
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout[proc.stdout.index('{'):])['video'] == str(video)
    assert video.stat().st_size > 0
    for args, needle in ((['--size', '100x50'], 'multiple of 16'),
                         (['--size', 'big'], 'WIDTHxHEIGHT'),
                         (['--episodes', '0'], '--episodes'),
                         (['--task-option', 'no_equals'], 'KEY=VALUE'),
                         (['--task-option', 'x=[1'], 'not YAML'),
                         # arm6_reach has no such option: named, exit 2
                         (['--task-option', 'command_schedule=[[1,0,0,0]]'],
                          '--task-option for task arm6_reach')):
        bad = cli_here(capsys, 'play', tiny_run, '--video', tmp_path / 'x.mp4', *args)
        assert bad.returncode == 2 and needle in bad.stderr and 'Traceback' not in bad.stderr
    bad = cli_here(capsys, 'play', tmp_path)
    assert bad.returncode == 2 and 'not a run directory' in bad.stderr
