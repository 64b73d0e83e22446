# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab`` command line: train, tasks, config, plot, export, record, replay, bag, check-robot.

Other packages add subcommands through the ``unilab.commands`` entry points
(``unilab_bench`` adds ``bench``).

Exit codes: 0 success; 1 the command ran and its result is negative
(``check-robot`` found a required item missing, ``doctor`` a failing check,
``bag info`` a damaged bag); 2 an input cannot be used (configuration, a missing, corrupt or
foreign file: checkpoint, bag, YAML), with one line naming it; 130 Ctrl-C.
Any other exception is a bug and keeps its traceback.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading

from unilab.export import export_run
from unilab.plot import plot_runs
from unilab.ranks import LAUNCH_OPTIONS, rank_ros_domain, strip_options, torchrun_command
from unilab_bag.player import parse_remaps
from unilab_bridge.variants import VARIANTS
from unilab_bringup.paths import default_config_files, profile_path, training_config
from unilab_bringup.robot_sim import print_summary, robot_sim_params, run_robot_sim
from unilab_core.atomic import atomic_write_text
from unilab_core.config import ConfigError, describe_keys, load_run_config
from unilab_core.errors import yaml_error
from unilab_core.robot_profile import load_profile
from unilab_core.ros.runtime import dump_stacks_on_signal
from unilab_core.stop import note_stop_signal, raise_stop
from unilab_datafactory.cli import add_commands as add_factory_commands
import yaml

#: Errors that say an input file cannot be used, by module and class: checked
#: only once that module is imported (a command that never loaded torch need
#: not import it to map an error).
INPUT_ERRORS = (
    ('unilab_policy.checkpoint', 'CheckpointError'),
    ('unilab_bag.storage', 'BagError'),
    ('unilab_bag.types', 'BagTypeError'),
    ('rosbags.rosbag2', 'ReaderError'),
    ('rosbags.rosbag2', 'WriterError'),  # e.g. `record OUT` where OUT exists
    ('unilab.plot', 'MetricsFileError'),
    ('yaml', 'YAMLError'),
)


def input_error(exc: BaseException) -> bool:
    """Return True if ``exc`` means a user's input cannot be used (exit 2, one line)."""
    if isinstance(exc, (FileNotFoundError, IsADirectoryError, NotADirectoryError,
                        PermissionError)):
        return True
    for module, name in INPUT_ERRORS:
        mod = sys.modules.get(module)
        if mod is not None and isinstance(exc, getattr(mod, name)):
            return True
    return False


def _train_overrides(args) -> dict:
    overrides = {}
    if args.task:
        overrides['run.task'] = args.task
    if args.steps is not None:
        overrides['run.total_steps'] = args.steps
    if args.num_envs is not None:
        overrides['rollout.num_envs'] = args.num_envs
    if args.seed is not None:
        overrides['run.seed'] = args.seed
    if args.device:
        overrides['run.device'] = args.device
    if args.multiprocess:
        overrides['run.process_mode'] = 'multiprocess'
    return overrides


def _train(args) -> int:
    if args.offline:
        return _train_offline(args)
    from unilab_policy import distributed
    if args.nproc_per_node is not None or args.nnodes > 1:
        if distributed.launched():
            raise ConfigError('--nproc-per-node/--nnodes start torchrun; inside torchrun '
                              'leave them out')
        return _launch_ranks(args, LAUNCH_OPTIONS)
    run_dir = args.run_dir
    overrides = _train_overrides(args)
    if distributed.launched():
        if not args.run_dir and not args.resume:
            raise ConfigError('several ranks need one run directory: pass --run-dir DIR')
        if args.multiprocess:
            raise ConfigError('several ranks run one composed graph each: leave out '
                              '--multiprocess')
        rank_ros_domain()
        if not args.direct:
            run_dir, overrides = _rank_graph_run(args, overrides)
    if args.direct:
        return _train_direct(args)
    from unilab_bringup.prepare import prepare_run
    from unilab_bringup.runner import GraphFailed, run_graph
    run = prepare_run(args.config, overrides, run_dir=run_dir, resume=args.resume or '')
    print(f'unilab: task {run.task.name} ({run.task.obs_dim} obs, {run.task.action_dim} act, '
          f'{run.task.command_interface}), {run.cfg.rollout.num_envs} envs, '
          f'{run.cfg.run.total_steps:,} steps, {run.cfg.run.process_mode}; run dir {run.run_dir}',
          flush=True)
    try:
        summary = run_graph(run, progress=run.cfg.logging.progress and not args.no_progress)
    except GraphFailed as exc:
        # A node process died (a crash, a kill): the others were stopped, the checkpoints
        # already written stay; the message names the node, how it ended and its log.
        print(f'unilab: training failed: {exc} (run in {run.run_dir})', file=sys.stderr)
        return 1
    if distributed.launched() and distributed.rank() > 0 and not summary.get('failed'):
        print(f'unilab: rank {distributed.rank()} done ({summary.get("steps")} env steps over '
              f'all ranks); rank 0 writes the run')
        return 0
    keys = ('steps', 'wall_s', 'fps', 'return_first', 'return_last', 'checkpoint')
    print(json.dumps({k: summary.get(k) for k in keys}, indent=2))
    if summary.get('failed'):
        print(f'unilab: training failed: {summary["failed"]} (run in {run.run_dir})',
              file=sys.stderr)
        return 1
    print(f'unilab: run written to {run.run_dir}')
    return 0


def _rank_graph_run(args, overrides: dict) -> tuple[str, dict]:
    """
    Return the run directory and overrides of this rank's own training graph.

    Rank 0 uses the run directory (checkpoints, metrics, summary); another rank
    writes its graph's files (configuration, parameters, safety counters) into
    ``rank<R>/`` below it. Every rank's envs are seeded ``seed + rank``; the
    trainer nodes join one process group (``unilab_policy.distributed``).
    """
    import pathlib
    from unilab_policy import distributed
    seed = load_run_config(list(default_config_files()) + list(args.config),
                           overrides).run.seed
    overrides = dict(overrides, **{'run.seed': distributed.rank_seed(seed)})
    run_dir = args.run_dir or args.resume
    if distributed.rank() > 0:
        run_dir = str(pathlib.Path(run_dir) / f'rank{distributed.rank()}')
    return run_dir, overrides


def _launch_ranks(args, launch_options: tuple[str, ...]) -> int:
    import pathlib
    import subprocess
    if args.multiprocess:
        raise ConfigError('--nproc-per-node runs one composed graph per rank: leave out '
                          '--multiprocess')
    nproc = 1 if args.nproc_per_node is None else args.nproc_per_node
    if nproc < 1 or args.nnodes < 1:
        raise ConfigError(f'--nproc-per-node {nproc} and --nnodes {args.nnodes} must be >= 1')
    if args.nnodes > 1 and not args.master_addr:
        raise ConfigError(f'--nnodes {args.nnodes} needs --master-addr HOST (the host of the '
                          'c10d rendezvous, reachable from every node)')
    if args.nnodes > 1 and not args.run_dir:
        raise ConfigError('--nnodes needs --run-dir (the same directory name on every host)')
    # Every rank must use one run directory: fix the default name here, once.
    run_dir = args.run_dir or args.resume or _default_run_dir(args)
    argv = strip_options(args.argv, launch_options + ('--run-dir',))
    argv += ['--run-dir', str(pathlib.Path(run_dir).resolve())]
    cmd = torchrun_command(argv, nproc, args.nnodes, args.node_rank, args.master_addr,
                           args.master_port)
    print('unilab: torchrun ' + ' '.join(cmd[3:]), flush=True)  # cmd: python -m torch...run
    rc = subprocess.call(cmd)
    if rc != 0:
        # torchrun stops every rank when one fails; rank 0 writes checkpoints atomically.
        latest = pathlib.Path(run_dir).resolve() / 'checkpoints' / 'latest.pt'
        print(f'unilab: training failed: a rank exited with an error (torchrun exit {rc}, '
              'its report above names the rank); all ranks were stopped; last checkpoint: '
              f'{latest if latest.is_file() else "none yet"}', file=sys.stderr)
        return 130 if rc == 130 else 1
    return 0


def _default_run_dir(args) -> str:
    from unilab_bringup.prepare import make_run_dir
    from unilab_core.config import load_run_config
    from unilab_bringup.paths import default_config_files
    cfg = load_run_config(list(default_config_files()) + list(args.config),
                          _train_overrides(args))
    return str(make_run_dir(cfg.run.task, None))


def _train_direct(args) -> int:
    import pathlib
    from unilab_bringup.direct import train_direct
    from unilab_bringup.prepare import make_run_dir
    from unilab_policy import distributed
    files = []
    if args.resume:
        saved = pathlib.Path(args.resume) / 'config.yaml'
        if not saved.is_file():
            raise ConfigError(f'--resume {args.resume}: no config.yaml (not a run directory?)')
        files.append(saved)
    cfg = training_config(files + list(args.config), _train_overrides(args))
    run_dir = make_run_dir(cfg.run.task, args.run_dir or args.resume or None)
    ranks = distributed.world_size()
    if distributed.is_writer():
        print(f'unilab: task {cfg.run.task}, {cfg.rollout.num_envs} envs x {ranks} rank(s), '
              f'{cfg.run.total_steps:,} steps, direct loop; run dir {run_dir}', flush=True)
    summary = train_direct(cfg, run_dir, resume=args.resume or '')
    if distributed.is_writer():
        summary['ranks'] = ranks
        atomic_write_text(run_dir / 'summary.json', json.dumps(summary, indent=2))
        keys = ('steps', 'wall_s', 'fps', 'return_first', 'return_last', 'checkpoint')
        print(json.dumps({k: summary.get(k) for k in keys}, indent=2))
        print(f'unilab: run written to {run_dir}')
    return 0


def _check_robot(args) -> int:
    from unilab_bridge.robot_probe import run_check
    profile = load_profile(profile_path(args.robot))
    ok, report = run_check(profile, args.namespace, args.timeout)
    print(report)
    return 0 if ok else 1


def _robot_sim(args) -> int:
    double, scenario = robot_sim_params(
        args.robot, args.variant, args.robots, args.time_scale, args.seed, args.goals,
        args.goal_timeout, args.results or '', args.stats or '', args.start or '',
        args.tilt_rad)
    print_summary(run_robot_sim(double, scenario, args.duration))
    return 0


def _play(args) -> int:
    from unilab.play import play, PlayOptions, RenderUnavailable
    try:
        width, height = (int(v) for v in args.size.lower().split('x'))
    except ValueError:
        print(f'unilab: --size {args.size}: expected WIDTHxHEIGHT, e.g. 640x480',
              file=sys.stderr)
        return 2
    video = args.video or ('' if args.frames else f'{args.run_dir.rstrip("/")}/play.mp4')
    options = {}
    for item in args.task_option:
        key, sep, value = item.partition('=')
        if not sep or not key.isidentifier():
            print(f'unilab: --task-option {item!r}: expected KEY=VALUE (VALUE in YAML), '
                  'e.g. command_schedule=[[5,0.6,0,0]]', file=sys.stderr)
            return 2
        try:
            options[key] = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            print(f'unilab: --task-option {key}: not YAML ({exc})', file=sys.stderr)
            return 2
    try:
        out = play(PlayOptions(args.run_dir, args.episodes, video, args.frames or '',
                               args.variant, args.seed, width, height, args.shadows,
                               options))
    except RenderUnavailable as exc:
        print(f'unilab: {exc}', file=sys.stderr)
        return 1
    print(json.dumps(out, indent=2))
    return 0


def _train_offline(args) -> int:
    from unilab.offline import train_offline
    overrides = {'run.task': args.task, 'offline.gradient_steps': args.steps,
                 'run.seed': args.seed, 'run.device': args.device}
    overrides = {k: v for k, v in overrides.items() if v not in (None, '')}
    summary = train_offline(args.offline, args.config, overrides, args.run_dir,
                            allow_damaged=args.allow_damaged)
    keys = ('steps', 'wall_s', 'fps', 'return_first', 'return_last', 'checkpoint',
            'iql_return', 'bc_return', 'behaviour_return')
    print(json.dumps({k: summary.get(k) for k in keys}, indent=2))
    return 0


def _record(args) -> int:
    from unilab_bag.recorder_node import record
    counts = record(args.out, args.topics, args.storage, args.duration)
    print(f'unilab: wrote {args.out}: ' + ', '.join(f'{t} {n}' for t, n in counts.items()))
    return 0


def _replay(args) -> int:
    from unilab_bag.player_node import replay
    from unilab_bag.storage import BagError
    try:
        counters = replay(args.bag, args.rate, args.loop, parse_remaps(args.remap), args.topics,
                          args.wait)
    except (BagError, LookupError, ValueError) as exc:
        print(f'unilab: {exc}', file=sys.stderr)
        return 2
    print(f'unilab: published {counters["published"]} messages in {counters["passes"]} pass(es)')
    return 0


def _bag(args) -> int:
    if args.bag_command == 'info':  # exit 1 when a bag is damaged (reported, not refused)
        from unilab_bag.info import bag_info, format_info
        damaged = False
        for path in args.bags:
            info = bag_info(path)
            damaged |= 'damaged' in info
            print(json.dumps(info, indent=2) if args.json else format_info(info))
        return 1 if damaged else 0
    from unilab_bag.storage import recover_bag
    out = args.out or args.bag.rstrip('/') + '-recovered'
    counts, scan = recover_bag(args.bag, out)
    print(f'unilab: recovered {sum(counts.values())} messages into {out}')
    if scan.lost:
        print(f'unilab: lost from {args.bag}: {scan.describe()}', file=sys.stderr)
    return 0


def _tasks(args) -> int:
    from unilab_bridge.tasks import available_tasks
    for name in available_tasks():
        print(name)
    return 0


def _config(args) -> int:
    from unilab_bringup.paths import training_config
    if args.check:
        cfg = training_config(list(args.check))  # what a training run would use
        print(json.dumps(cfg.to_dict(), indent=2))
        return 0
    for key, desc, default in describe_keys():
        print(f'{key:34} {default!s:>12}  {desc}')
    return 0


def _export(args) -> int:
    from unilab_policy.export import ONNX_TOLERANCE
    out, diff = export_run(args.run_dir, args.format, args.out)
    print(f'unilab: exported {args.format} policy to {out}')
    if diff is not None:
        print(f'unilab: onnxruntime check: max abs difference {diff:.2e} '
              f'(<= {ONNX_TOLERANCE:.0e}: ok)')
    return 0


def _plot(args) -> int:
    if args.smooth < 1:
        raise ConfigError(f'plot --smooth {args.smooth}: expected a number of rows >= 1')
    out = plot_runs(args.run_dirs, args.out, args.title, args.monitor, args.label,
                    args.metric, args.smooth)
    print(f'unilab: wrote {out}')
    return 0


def _doctor(args) -> int:
    from unilab.doctor.report import diagnose, exit_code, format_text, to_json
    checks = diagnose(args.config)
    print(to_json(checks) if args.json else format_text(checks))
    return exit_code(checks)


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser (also used by the docs' command lists)."""
    parser = argparse.ArgumentParser(prog='unilab', description=__doc__)
    sub = parser.add_subparsers(dest='command', required=True)

    t = sub.add_parser('train', help='train a policy through the ROS 2 graph')
    t.add_argument('--task', help='task name (see `unilab tasks`); default arm6_reach')
    t.add_argument('--steps', type=int, help='environment steps (run.total_steps)')
    t.add_argument('--num-envs', type=int, help='parallel envs (rollout.num_envs)')
    t.add_argument('--seed', type=int, help='seed (run.seed)')
    t.add_argument('--device', help='auto | cpu | cuda (run.device)')
    t.add_argument('--run-dir', help='output directory (default runs/<task>-<time>)')
    t.add_argument('--config', action='append', default=[],
                   help='extra YAML merged over the defaults (repeatable)')
    t.add_argument('--resume', metavar='RUN_DIR', help='continue a run from its latest checkpoint')
    t.add_argument('--multiprocess', action='store_true', help='one process per node')
    t.add_argument('--no-progress', action='store_true', help='no live progress display')
    t.add_argument('--direct', action='store_true',
                   help='train in one loop without ROS (same components as the graph)')
    t.add_argument('--nproc-per-node', type=int, metavar='K',
                   help='data-parallel ranks on this host, started with torchrun: one '
                        'composed graph per rank (or with --direct one loop per rank; '
                        'docs/scaling.md)')
    t.add_argument('--nnodes', type=int, default=1, metavar='M',
                   help='hosts taking part (c10d rendezvous at --master-addr)')
    t.add_argument('--node-rank', type=int, metavar='R', help='this host\'s rank (optional)')
    t.add_argument('--master-addr', default='', metavar='HOST',
                   help='rendezvous host for --nnodes > 1')
    t.add_argument('--master-port', type=int, default=29400, metavar='PORT')
    t.add_argument('--offline', nargs='+', metavar='BAG',
                   help='train IQL + BC from bags instead (--steps = gradient steps)')
    t.add_argument('--allow-damaged', action='store_true',
                   help='--offline: train on the readable part of damaged bags (what was '
                   'lost is printed and kept in summary.json) instead of refusing them')
    t.set_defaults(func=_train)

    r = sub.add_parser('record', help='record graph topics into a rosbag2 (see docs/bags.md)')
    r.add_argument('out', help='bag directory to create')
    r.add_argument('--topics', nargs='+', help='topics (default: sensors, observation, '
                   'action, safe command, rollout, clock)')
    r.add_argument('--storage', choices=('mcap', 'sqlite3'), default='mcap')
    r.add_argument('--duration', type=float, default=0.0, help='stop after S seconds (0: Ctrl-C)')
    r.set_defaults(func=_record)

    rp = sub.add_parser('replay', help='publish a bag into the graph with /clock')
    rp.add_argument('bag')
    rp.add_argument('--rate', type=float, default=1.0)
    rp.add_argument('--loop', action='store_true')
    rp.add_argument('--remap', action='append', default=[], metavar='FROM:=TO')
    rp.add_argument('--topics', nargs='+', help='only these bag topics')
    rp.add_argument('--wait', type=float, default=1.0,
                    help='wait up to S seconds for a subscriber on every bag topic first')
    rp.set_defaults(func=_replay)

    bg = sub.add_parser('bag', help='inspect or recover bags')
    bsub = bg.add_subparsers(dest='bag_command', required=True)
    bi = bsub.add_parser('info', help='topics, readable counts, duration, episode statistics; '
                         'a damaged bag: what was lost and where (exit code 1)')
    bi.add_argument('bags', nargs='+')
    bi.add_argument('--json', action='store_true')
    br = bsub.add_parser('recover', help='rewrite a killed recording or the readable part of '
                         'a damaged bag as a clean bag')
    br.add_argument('bag')
    br.add_argument('out', nargs='?', help='default BAG-recovered')
    bg.set_defaults(func=_bag)

    cr = sub.add_parser('check-robot', help='check a live robot\'s standard topics against '
                        'its profile (exit 1 if a required item is missing)')
    cr.add_argument('--robot', default='arm6', metavar='PROFILE',
                    help='robot profile: shipped name (arm6, quad8, quad12, ur5e) or YAML file')
    cr.add_argument('--namespace', default='', metavar='NS',
                    help='the robot\'s namespace in a fleet, e.g. /robot0')
    cr.add_argument('--timeout', type=float, default=5.0,
                    help='seconds to discover and observe (5)')
    cr.set_defaults(func=_check_robot)

    rs = sub.add_parser('robot-sim', help='simulated robot(s) behind a ros2_control robot\'s '
                        'standard topics (robot double), optionally scored by a scenario')
    rs.add_argument('--robot', default='arm6', metavar='PROFILE',
                    help='robot profile: shipped name (arm6, quad8, quad12, ur5e) or YAML file')
    rs.add_argument('--variant', default='nominal', metavar='NAME',
                    help='nominal, real (held-out dynamics and imperfections of `bench '
                    'sim2real`), payload; a legged robot (go2): nominal, real, slippery')
    rs.add_argument('--robots', type=int, default=1, metavar='K',
                    help='robots; K > 1: robot k under /robot<k> (k from 0)')
    rs.add_argument('--time-scale', type=float, default=1.0, metavar='S',
                    help='simulated seconds per wall-clock second (1)')
    rs.add_argument('--seed', type=int, default=0)
    rs.add_argument('--goals', type=int, default=0, metavar='N',
                    help='run the scenario: N goals per robot, end when all are scored')
    rs.add_argument('--goal-timeout', type=float, metavar='S',
                    help='simulated seconds per goal (default 4)')
    rs.add_argument('--results', metavar='FILE.json', help='per-goal results (scenario)')
    rs.add_argument('--stats', metavar='FILE.json', help='the double\'s counters on exit')
    rs.add_argument('--start', metavar='POSE', help='a legged robot\'s start: lie (default), '
                    'stand, or tilt (the stand pose rolled by --tilt-rad, falling)')
    rs.add_argument('--tilt-rad', type=float, metavar='RAD', help='--start tilt: the roll')
    rs.add_argument('--duration', type=float, default=0.0, metavar='S',
                    help='stop after S wall-clock seconds (0: Ctrl-C or scenario end)')
    rs.set_defaults(func=_robot_sim)

    pl = sub.add_parser('play', help='watch a trained policy in the simulator (MP4 video)')
    pl.add_argument('run_dir', help='run directory (or a checkpoint inside one)')
    pl.add_argument('--episodes', type=int, default=1, metavar='N')
    pl.add_argument('--video', metavar='FILE.mp4', help='default RUN_DIR/play.mp4')
    pl.add_argument('--frames', metavar='FILE.png', help='also write a strip of frames')
    pl.add_argument('--variant', choices=tuple(VARIANTS), default='nominal')
    pl.add_argument('--seed', type=int, default=0)
    pl.add_argument('--size', default='640x480', metavar='WxH',
                    help='video size, multiples of 16 (640x480)')
    pl.add_argument('--shadows', action='store_true',
                    help='render shadows (slow on a software renderer)')
    pl.add_argument('--task-option', action='append', default=[], metavar='KEY=VALUE',
                    help='an option of the task\'s constructor, VALUE in YAML (repeatable), '
                    'e.g. command_schedule=[[4,0.6,0,0],[4,0,0,0.8]] for go2_walk')
    pl.set_defaults(func=_play)

    s = sub.add_parser('tasks', help='list available tasks')
    s.set_defaults(func=_tasks)

    c = sub.add_parser('config', help='list configuration keys, or --check FILE')
    c.add_argument('--check', action='append', help='validate a YAML file over the defaults')
    c.set_defaults(func=_config)

    p = sub.add_parser('plot', help='plot training curves of runs to a PNG')
    p.add_argument('run_dirs', nargs='+')
    p.add_argument('--out', default='training_curve.png')
    p.add_argument('--title', default='')
    p.add_argument('--monitor', action='append', default=[],
                   help='also plot an SB3 Monitor CSV (rolling mean of 64 episodes)')
    p.add_argument('--label', action='append', default=[], help='curve labels, in order')
    p.add_argument('--metric', action='append', default=[],
                   help='a metrics.csv column to plot, one panel each (default '
                   'charts/mean_return; `operations`: success rate, episode length, '
                   'safety clamp / fallback / reject shares, transport drops)')
    p.add_argument('--smooth', type=int, default=1, metavar='N',
                   help='plot each run\'s rolling mean over N metrics rows (default 1: as '
                   'logged)')
    p.set_defaults(func=_plot)

    d = sub.add_parser('doctor', help='check this machine for training and real-time use '
                       '(exit 1 if a check fails)')
    d.add_argument('--config', action='append', default=[],
                   help='extra YAML merged over the defaults (repeatable)')
    d.add_argument('--json', action='store_true', help='print a JSON list of the checks')
    d.set_defaults(func=_doctor)

    e = sub.add_parser('export', help='export a trained policy for deployment')
    e.add_argument('run_dir')
    e.add_argument('--format', choices=('onnx', 'torchscript'), default='onnx')
    e.add_argument('--out', help='output file (default RUN_DIR/policy.<ext>)')
    e.set_defaults(func=_export)
    from unilab.cli_deploy import add_commands as add_deploy_commands
    add_deploy_commands(sub)
    add_factory_commands(sub)
    for command in _command_plugins():
        command(sub)
    return parser


def _command_plugins() -> list:
    """
    Return the subcommands other packages add (entry point group ``unilab.commands``).

    ``unilab_bench`` adds ``bench`` this way, so this package does not depend on it.
    """
    from importlib.metadata import entry_points
    return [ep.load() for ep in sorted(entry_points(group='unilab.commands'),
                                       key=lambda ep: ep.name)]


def _record_interrupts() -> tuple[list, object]:
    """
    Make Ctrl-C raise KeyboardInterrupt and remember that it came; return (record, previous).

    Long-running commands (train, deploy, robot-sim, record...) stop cleanly on
    Ctrl-C and return normally (the spin loops catch the interrupt to flush
    checkpoints and stats), so the exit status cannot come from the exception:
    ``main`` turns a clean return after Ctrl-C into 130. Installed even where a
    background start inherited SIGINT ignored (``kill -INT`` must stop it).
    """
    record: list = []
    if threading.current_thread() is not threading.main_thread():
        return record, None

    def on_sigint(signum, frame):
        record.append(signum)
        note_stop_signal(signum)  # a spin loop's executor error from here is this stop
        raise_stop()  # KeyboardInterrupt, held to the end of a STOP_DEFERRED section
    return record, signal.signal(signal.SIGINT, on_sigint)


def main(argv: list[str] | None = None) -> int:
    """Entry point; configuration errors exit 2 with one clear message; Ctrl-C exits 130."""
    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)
    if args.argv[:1] == ['train']:
        args.argv = args.argv[1:]
    interrupted, previous = _record_interrupts()
    dump_stacks_on_signal()  # `kill -USR1 PID`: where each thread is, the run goes on
    try:
        rc = args.func(args)
        if interrupted and not rc:
            print('unilab: interrupted', file=sys.stderr)
            return 130
        return rc
    except ConfigError as exc:
        text = str(exc)  # several problems: one per line; one problem: one line
        print(f'unilab: configuration error:{chr(10) if chr(10) in text else " "}{text}',
              file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print('unilab: interrupted', file=sys.stderr)
        return 130
    except Exception as exc:  # noqa: B902 - mapped by type below, anything else re-raised
        if not input_error(exc):
            raise
        yaml = sys.modules.get('yaml')
        if yaml is not None and isinstance(exc, yaml.YAMLError):
            print('unilab: ' + yaml_error(None, exc), file=sys.stderr)
        else:
            print('unilab: ' + ' '.join(str(exc).split()), file=sys.stderr)
        return 2
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


if __name__ == '__main__':
    sys.exit(main())
