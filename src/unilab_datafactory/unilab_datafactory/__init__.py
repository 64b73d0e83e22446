# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The data factory: camera frames to reviewed, augmented training tensors (docs/factory.md).

``scene`` renders the arm with exact boxes, ``store`` keeps samples as safetensors with a
manifest, ``detector`` / ``train`` make and score the detector, ``label`` pseudo-labels a
bag's images and queues the unsure ones, ``review_server`` serves the review page,
``augment`` blurs, jitters and adds noise in torch, ``cli`` is ``unilab factory``.
"""
