# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""UniLab benchmarks: every measured path beside its baseline in the same run."""
