# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``unilab export RUN_DIR``: the trained policy (with its normaliser) as ONNX or TorchScript."""

from __future__ import annotations

import pathlib


def export_run(run_dir: str, fmt: str,
               out: str | None = None) -> tuple[pathlib.Path, float | None]:
    """Export and (for ONNX) verify against onnxruntime; return (path, max abs diff)."""
    from unilab_policy.action_map import ActionMap
    from unilab_policy.export import (export_onnx, export_torchscript, ONNX_TOLERANCE,
                                      verify_onnx)
    from unilab_policy.networks import load_trained
    from unilab_bringup.deploy import describe_model, model_metadata
    trained = load_trained(run_dir)
    bundle, obs_dim = trained.bundle, trained.input_dim
    # What deployment checks against a robot profile travels inside the file.
    desc = describe_model(run_dir)
    metadata = model_metadata(trained.params, desc.task, desc.envelope)
    norm = bundle.obs_normalizer if trained.params.normalization.observations else None
    # The file gives commands in joint units: the action map is part of it.
    action_map = ActionMap.of(trained.params.model, trained.params.act_dim)
    ext = {'onnx': 'onnx', 'torchscript': 'pt'}[fmt]
    path = pathlib.Path(out) if out else pathlib.Path(run_dir) / f'policy.{ext}'
    if fmt == 'onnx':
        module = export_onnx(bundle.actor_critic, norm, path, obs_dim, metadata=metadata,
                             action_map=action_map)
        diff = verify_onnx(path, module, obs_dim)
        if not diff <= ONNX_TOLERANCE:  # NaN included
            raise RuntimeError(f'ONNX output differs from torch by {diff:.2e} '
                               f'(> {ONNX_TOLERANCE}); {path} is not trustworthy')
        return path, diff
    export_torchscript(bundle.actor_critic, norm, path, obs_dim, metadata=metadata,
                       action_map=action_map)
    return path, None
