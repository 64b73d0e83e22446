# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The CLI's interoperability commands, added through the ``unilab.commands`` entry point.

- ``unilab import-policy rsl_rl FILE --task T [--spec FILE] [--run-dir DIR]``
  (``rsl_import``);
- ``unilab export RUN_DIR --format rsl_rl [--out DIR]``: the ``export`` command
  takes one more format (``rsl_export``); the others stay the CLI's own.
"""

from __future__ import annotations

import argparse


def _import_policy(args) -> int:
    from unilab_interop.rsl_import import import_rsl
    run_dir = import_rsl(args.file, args.task, args.spec, args.run_dir, args.trust_pickle)
    print(f'unilab: imported {args.source} policy {args.file} into {run_dir}')
    print(f'unilab: deploy it with `unilab deploy {run_dir} --robot PROFILE` or watch it with '
          f'`unilab play {run_dir}`')
    return 0


def _export_with_rsl(plain):
    def run(args) -> int:
        if args.format != 'rsl_rl':
            return plain(args)
        from unilab_interop.rsl_export import export_rsl
        out = export_rsl(args.run_dir, args.out)
        print(f'unilab: exported rsl_rl checkpoint {out["checkpoint"]}, ONNX {out["onnx"]} '
              f'and spec {out["spec"]}')
        print(f'unilab: rsl_rl\'s actor against ours: max abs difference {out["diff"]:.2e}')
        return 0
    return run


def _subparser(sub, name: str) -> argparse.ArgumentParser | None:
    return sub.choices.get(name)


def add_commands(sub) -> None:
    """Add ``import-policy`` and the ``rsl_rl`` format of ``export`` to the CLI."""
    ip = sub.add_parser('import-policy',
                        help='turn a policy trained elsewhere (rsl_rl) into a run directory')
    ip.add_argument('source', choices=('rsl_rl',), help='the library that trained it')
    ip.add_argument('file', help='rsl_rl model_<it>.pt or its exported policy.onnx')
    ip.add_argument('--task', required=True, help='the UniLab task it drives, e.g. arm6_reach')
    ip.add_argument('--spec', help='YAML: observation layout, joint_names, action_mode, '
                    'action_scale, action_offset, activation (docs/rsl_rl.md); default: the '
                    'task\'s own')
    ip.add_argument('--trust-pickle', action='store_true',
                    help='load a checkpoint that holds objects beyond weights (pickle can '
                    'run code: only for files from someone you trust)')
    ip.add_argument('--run-dir', help='where to write the run (default '
                    'runs/<task>-rsl_rl-import)')
    ip.set_defaults(func=_import_policy)
    export = _subparser(sub, 'export')
    if export is None:
        return
    for action in export._actions:
        if action.dest == 'format':
            action.choices = (*action.choices, 'rsl_rl')
            action.help = 'onnx, torchscript, or rsl_rl (model_<it>.pt, policy.onnx and ' \
                          'the spec in --out, a directory; default RUN_DIR/rsl_rl)'
    export.set_defaults(func=_export_with_rsl(export.get_default('func')))
