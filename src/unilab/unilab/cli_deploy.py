# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``unilab deploy``, ``adapt``, ``arm`` and ``disarm``: a trained policy on a robot, moving."""

from __future__ import annotations

import sys

from unilab_adapt.graph import prepare_adapt
from unilab_bringup.deploy import prepare_deploy
from unilab_bringup.runner import GraphFailed, merge_summary, spin_composed, spin_processes


def _deploy(args) -> int:
    adapt = getattr(args, 'adapt', False)
    # The CLI wires the adaptation feature: it extends the deploy graph (unilab_adapt.graph).
    prepare = prepare_adapt if adapt else prepare_deploy
    run = prepare(args.model, args.robot, armed=args.armed, namespace=args.namespace,
                  config_files=args.config, run_dir=args.run_dir,
                  require_envelope=args.require_envelope)
    for text in run.warnings:
        print(f'unilab: warning: {text}', file=sys.stderr, flush=True)
    p = run.profile
    ns = run.graph.namespace
    print(f'unilab: deploying {run.model.path} on robot `{p.name}` ({len(p.joint_names)} '
          f'joints, {p.control_rate_hz:g} Hz) -> {p.command.type} on {ns}{p.command.topic}; '
          f'run dir {run.run_dir}', flush=True)
    if adapt:
        a = run.cfg.adapt
        print(f'unilab: adapting online: a round every {a.period_s:g} s after '
              f'{a.min_episodes} robot episodes, fine-tuning {a.layers} layers; versions, '
              f'scores and decisions in {run.run_dir}/adapt', flush=True)
    if not args.armed:
        arm = f'unilab arm --namespace {ns}' if ns else 'unilab arm'
        print(f'unilab: DISARMED: nothing moves until `{arm}` (or `ros2 service call '
              f'{ns}/safety/arm std_srvs/srv/Trigger`)', flush=True)
    # The adapter trains beside the control loop: never in its interpreter (one GIL, one
    # executor). An adaptation graph runs its control nodes in one process (as a deploy
    # does) and the recorder and adapter each in their own; --multiprocess: one per node.
    if args.multiprocess or adapt:
        try:
            codes = spin_processes(run.graph, run.params_file, run.run_dir / 'logs',
                                   one_per_node=args.multiprocess)
        except GraphFailed as exc:
            # A dead node (the policy, say): the others were stopped; the gate held until then.
            print(f'unilab: deployment stopped: {exc}', file=sys.stderr)
            return 1
        print(f'unilab: stopped ({codes})')
        stats = {}
    else:
        stats = spin_composed(run.graph, run.params_file)
        print('unilab: stopped')
    _report(run, merge_summary(run, {'node_counters': stats}), stats)
    return 0


#: What the deploy summary line names: the gate's refusals and clamps, the goals refused.
REPORTED = ('rejected', 'clamped', 'envelope_clamps', 'tracking_clamps', 'tracking_holds',
            'tool_speed_clamps', 'goals_refused_workspace', 'goals_refused_frame',
            'goals_refused_non_finite')


def _report(run, summary: dict, node_counters: dict) -> None:
    """Print the refusal counters of the written ``summary.json``."""
    found = {**summary.get('safety', {}), **node_counters.get('perception', {})}
    line = ', '.join(f'{k} {found[k]}' for k in REPORTED if k in found)
    if line:
        print(f'unilab: {line} (all counters: {run.run_dir / "summary.json"})', flush=True)


def _arm(args) -> int:
    import rclpy
    from std_srvs.srv import Trigger
    service = f'{args.namespace.rstrip("/")}/safety/{args.action}'
    rclpy.init()
    node = rclpy.create_node('unilab_arm')
    try:
        client = node.create_client(Trigger, service)
        if not client.wait_for_service(timeout_sec=args.timeout):
            print(f'unilab: no service {service} (is `unilab deploy` running?)',
                  file=sys.stderr)
            return 1
        future = client.call_async(Trigger.Request())
        rclpy.spin_until_future_complete(node, future, timeout_sec=args.timeout)
        if not future.done():
            print(f'unilab: {service} did not answer in {args.timeout:g} s', file=sys.stderr)
            return 1
        res = future.result()
        print(f'unilab: {service}: {res.message}')
        return 0 if res.success else 1
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


def add_commands(sub) -> None:
    """Add ``deploy``, ``adapt``, ``arm`` and ``disarm`` to the CLI's subparsers."""
    for name, text, model_help in (
            ('deploy', 'run a trained policy on a ROS 2 robot (or the robot double) through '
             'its own topics, behind the safety gate',
             'run directory, checkpoint, or exported .onnx / TorchScript'),
            ('adapt', 'deploy a trained policy and fine-tune it online on what the robot '
             'records, behind a safety fuse (docs/adapt.md)', 'run directory or checkpoint')):
        d = sub.add_parser(name, help=text)
        d.add_argument('model', help=model_help)
        d.add_argument('--robot', required=True,
                       help='robot profile: a shipped name (arm6, quad8, quad12, ur5e) or a '
                       'YAML file')
        d.add_argument('--armed', action='store_true',
                       help='let commands reach the robot at once (default: only after `arm`)')
        d.add_argument('--namespace', default='', help='ROS namespace of this robot (fleets)')
        d.add_argument('--multiprocess', action='store_true',
                       help='one process per node (adapt: also for the control nodes, '
                       'which otherwise share one process)')
        d.add_argument('--config', action='append', default=[],
                       help='extra YAML merged over the defaults (e.g. the adapt: section)')
        d.add_argument('--run-dir', help=f'output directory (default runs/<robot>-{name}-<time>)')
        d.add_argument('--require-envelope', action='store_true',
                       help='refuse a model that carries no trained joint range (older '
                       'checkpoints, imports without a joint_range; default: warn and enforce '
                       'the driver\'s limits only)')
        d.set_defaults(func=_deploy, adapt=name == 'adapt')
    for action, text in (('arm', 'let a running deployment command the robot'),
                         ('disarm', 'stop a running deployment from commanding the robot')):
        a = sub.add_parser(action, help=text)
        a.add_argument('--namespace', default='', help='the deployment\'s namespace')
        a.add_argument('--timeout', type=float, default=5.0, help='seconds to wait (5)')
        a.set_defaults(func=_arm, action=action)
