# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``unilab view``: the live robot, its command and the gate in a browser (docs/view.md)."""

from __future__ import annotations


def _view(args) -> int:
    from unilab_view import view_node  # rclpy and viser: only when the command runs
    namespaces = args.namespace or ['']
    print(f'unilab: view on http://localhost:{args.port} (Ctrl-C stops it)', flush=True)
    view_node.main(namespaces=namespaces, port=args.port, allow_arm=args.allow_arm)
    return 0


def add_command(sub) -> None:
    """Add the ``view`` subcommand to the CLI's subparsers."""
    v = sub.add_parser('view', help='the live robot, its command, the goal and the safety '
                       'gate in a browser (read-only unless --allow-arm)')
    v.add_argument('--namespace', action='append', default=[], metavar='NS',
                   help='robot namespace (repeat for a fleet: --namespace /robot0 ...)')
    v.add_argument('--port', type=int, default=8080, help='web page port (8080)')
    v.add_argument('--allow-arm', action='store_true',
                   help='show Arm / Disarm buttons (the services `unilab arm` calls)')
    v.set_defaults(func=_view)
