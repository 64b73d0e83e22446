# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``unilab view``: the live robot, its command and the gate in a browser (docs/view.md)."""

from __future__ import annotations

import os
import sys


def view_argv(args) -> list[str]:
    """Return the view node's command line for the parsed ``unilab view`` arguments."""
    argv = [sys.executable, '-m', 'unilab_view.view_node', '--port', str(args.port)]
    for ns in args.namespace:
        argv += ['--namespace', ns]
    if args.allow_arm:
        argv.append('--allow-arm')
    if args.foxglove:
        argv += ['--foxglove-port', str(args.foxglove_port)]
    return argv


def _view(args) -> int:
    print(f'unilab: view on http://localhost:{args.port} (Ctrl-C stops it)', flush=True)
    if args.foxglove:
        print(f'unilab: Foxglove: open ws://localhost:{args.foxglove_port}', flush=True)
    # The view node replaces this process: rclpy and viser load only for it.
    argv = view_argv(args)
    os.execv(argv[0], argv)
    return 0  # not reached


def add_command(sub) -> None:
    """Add the ``view`` subcommand to the CLI's subparsers."""
    v = sub.add_parser('view', help='the live robot, its command, the goal and the safety '
                       'gate in a browser (read-only unless --allow-arm)')
    v.add_argument('--namespace', action='append', default=[], metavar='NS',
                   help='robot namespace (repeat for a fleet: --namespace /robot0 ...)')
    v.add_argument('--port', type=int, default=8080, help='web page port (8080)')
    v.add_argument('--allow-arm', action='store_true',
                   help='show Arm / Disarm buttons (the services `unilab arm` calls)')
    v.add_argument('--foxglove', action='store_true',
                   help='also serve the graph to Foxglove (WebSocket, frames from the URDF)')
    v.add_argument('--foxglove-port', type=int, default=8765, help='Foxglove port (8765)')
    v.set_defaults(func=_view)
