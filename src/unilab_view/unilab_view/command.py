# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``unilab view``: the live robot, its command and the gate in a browser (docs/view.md)."""

from __future__ import annotations

import os
import pathlib
import sys

from unilab_core import topics
from unilab_view.access import DEFAULT_HOST, is_loopback, page_url, parse_host
from unilab_view.workspace import model_workspace


def view_argv(args) -> list[str]:
    """Return the view node's command line for the parsed ``unilab view`` arguments."""
    argv = [sys.executable, '-m', 'unilab_view.view_node', '--port', str(args.port),
            '--host', parse_host(args.host)]
    for ns in args.namespace:
        argv += ['--namespace', ns]
    if args.allow_arm:
        argv.append('--allow-arm')
    if args.foxglove:
        argv += ['--foxglove-port', str(args.foxglove_port)]
    if args.mcap:
        mcap = pathlib.Path(args.mcap)
        if mcap.exists():
            raise ValueError(f'{mcap}: exists already; record into a new file')
        if not mcap.parent.is_dir():
            raise ValueError(f'{mcap.parent}: no such directory')
        argv += ['--mcap', str(mcap.resolve())]
        if args.mcap_tensors:
            argv.append('--mcap-tensors')
    elif args.mcap_tensors:
        raise ValueError('--mcap-tensors records into --mcap FILE: name the file')
    # --training: the training graph's own names (unilab_core.topics), unless given; its
    # joint states at a screen's rate (the bridge's view topic, not the per-step one).
    joint_states = args.joint_states or (topics.SIM_VIEW_JOINT_STATES if args.training
                                         else 'joint_states')
    description = args.description or (topics.SIM_ROBOT_DESCRIPTION if args.training
                                       else 'robot_description')
    argv += ['--joint-states', joint_states, '--description', description,
             '--env', str(args.env)]
    if args.training and args.env == 0:  # the bridge's env 0 goal and command (view_out)
        argv += ['--goal', topics.SIM_GOAL_POSE, '--command', topics.SIM_COMMAND]
    elif args.training:
        print(f'unilab: view --training: the bridge publishes env 0\'s goal and command only; '
              f'env {args.env} is drawn without them', file=sys.stderr, flush=True)
    if args.model:
        found = model_workspace(args.model)
        if found is None:
            print(f'unilab: {args.model} carries no workspace (no checkpoint yet, or a task '
                  'without one): the box is not drawn', file=sys.stderr, flush=True)
        else:
            box, frame = found
            argv += ['--workspace', *map(str, box), '--workspace-frame', frame]
    return argv


def _view(args) -> int:
    # The view node replaces this process: rclpy and viser load only for it.
    try:
        argv = view_argv(args)
    except (ValueError, RuntimeError) as exc:  # --host, --model or --mcap: a wrong value
        print(f'unilab: view: {exc}', file=sys.stderr, flush=True)
        return 2
    host = argv[argv.index('--host') + 1]
    print(f'unilab: view on {page_url(host, args.port)} (Ctrl-C stops it)', flush=True)
    if not is_loopback(host):
        token = '; Arm / Disarm need the token the view prints as it starts'
        print(f'unilab: view: listening on {host}: the page is reachable from other machines'
              + (token if args.allow_arm else ''), file=sys.stderr, flush=True)
    if args.foxglove:
        print(f'unilab: Foxglove: open ws://localhost:{args.foxglove_port}', flush=True)
    if args.mcap:
        print(f'unilab: recording the Foxglove channels into {args.mcap} (in place when the '
              'view stops)', flush=True)
    os.execv(argv[0], argv)
    return 0  # not reached


def add_command(sub) -> None:
    """Add the ``view`` subcommand to the CLI's subparsers."""
    v = sub.add_parser('view', help='the live robot, its command, the goal and the safety '
                       'gate in a browser (read-only unless --allow-arm)')
    v.add_argument('--namespace', action='append', default=[], metavar='NS',
                   help='robot namespace (repeat for a fleet: --namespace /robot0 ...)')
    v.add_argument('--port', type=int, default=8080, help='web page port (8080)')
    v.add_argument('--host', default=DEFAULT_HOST, metavar='ADDR',
                   help='address the page listens on (127.0.0.1: this machine only; 0.0.0.0: '
                   'every interface, reachable from other machines)')
    v.add_argument('--allow-arm', action='store_true',
                   help='show Arm / Disarm buttons (the services `unilab arm` calls); off '
                   'loopback they need the token the view prints')
    v.add_argument('--foxglove', action='store_true',
                   help='also serve the graph to Foxglove (WebSocket, frames from the URDF)')
    v.add_argument('--foxglove-port', type=int, default=8765, help='Foxglove port (8765)')
    v.add_argument('--mcap', default=None, metavar='FILE',
                   help='also record the Foxglove channels (the same messages) into a new '
                   'MCAP file, put in place when the view stops')
    v.add_argument('--mcap-tensors', action='store_true',
                   help='with --mcap: record every TensorBatch topic of the graph too (each '
                   'publisher then builds a standard message per step, as `unilab record`)')
    v.add_argument('--training', action='store_true',
                   help='beside `unilab train`: its joint states and URDF (under /unilab/sim)')
    v.add_argument('--joint-states', default=None, metavar='TOPIC',
                   help='joint-state topic, under each namespace when relative (joint_states; '
                   'with --training /unilab/sim/view/joint_states, every env at 20 Hz)')
    v.add_argument('--description', default=None, metavar='TOPIC',
                   help='URDF topic (robot_description; with --training '
                   '/unilab/sim/robot_description)')
    v.add_argument('--env', type=int, default=0,
                   help='of a training graph\'s batched joint states (env<i>/<joint>), the '
                   'env shown (0)')
    v.add_argument('--model', default=None, metavar='RUN',
                   help='a run directory, checkpoint or exported model: draw the workspace '
                   'box it was trained for')
    v.set_defaults(func=_view)
