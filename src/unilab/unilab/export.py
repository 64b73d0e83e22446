# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``unilab export RUN_DIR``: the trained policy (with its normaliser) as ONNX or TorchScript."""

from __future__ import annotations

import pathlib

from unilab_core.config import ConfigError
import yaml

ONNX_TOLERANCE = 1e-5


def load_bundle(run_dir: str | pathlib.Path):
    """Rebuild the policy bundle of a run from its parameters and latest checkpoint."""
    import torch
    from unilab_policy.checkpoint import load_checkpoint, one_line, restoring
    from unilab_policy.history import policy_input_dim
    from unilab_policy.models import make_actor_critic, PolicyBundle
    from unilab_policy.normalizer import EmpiricalNormalization

    run_dir = pathlib.Path(run_dir)
    params_file = run_dir / 'graph_params.yaml'
    ckpt = run_dir / 'checkpoints' / 'latest.pt'
    if not params_file.is_file() or not ckpt.is_file():
        raise ConfigError(f'{run_dir}: not a run directory with a checkpoint '
                          '(needs graph_params.yaml and checkpoints/latest.pt)')
    try:
        p = yaml.safe_load(params_file.read_text())['policy']['ros__parameters']
        # The network's input: the observation plus the policy's last actions, if configured.
        width = policy_input_dim(p['obs_dim'], p['act_dim'], p['model'].get('action_history', 0))
        ac = make_actor_critic(width, p['act_dim'], p['model'])
        bundle = PolicyBundle(ac, EmpiricalNormalization(width, clip=p['normalization']['clip']))
        use_norm = bool(p['normalization']['observations'])
    except (yaml.YAMLError, UnicodeDecodeError, KeyError, TypeError, ValueError,
            AttributeError, RuntimeError) as exc:
        raise ConfigError(f'{params_file}: not the parameter file of a run ({one_line(exc)})'
                          ) from None
    state = load_checkpoint(ckpt, map_location='cpu', required=('bundle',))
    with restoring(ckpt):
        bundle.load_state_dict(state['bundle'])
    return bundle.to(torch.device('cpu')).eval(), width, use_norm


def export_run(run_dir: str, fmt: str,
               out: str | None = None) -> tuple[pathlib.Path, float | None]:
    """Export and (for ONNX) verify against onnxruntime; return (path, max abs diff)."""
    from unilab_policy.export import export_onnx, export_torchscript, verify_onnx
    bundle, obs_dim, use_norm = load_bundle(run_dir)
    norm = bundle.obs_normalizer if use_norm else None
    ext = {'onnx': 'onnx', 'torchscript': 'pt'}[fmt]
    path = pathlib.Path(out) if out else pathlib.Path(run_dir) / f'policy.{ext}'
    if fmt == 'onnx':
        module = export_onnx(bundle.actor_critic, norm, path, obs_dim)
        diff = verify_onnx(path, module, obs_dim)
        if diff > ONNX_TOLERANCE:
            raise RuntimeError(f'ONNX output differs from torch by {diff:.2e} '
                               f'(> {ONNX_TOLERANCE}); {path} is not trustworthy')
        return path, diff
    export_torchscript(bundle.actor_critic, norm, path, obs_dim)
    return path, None
