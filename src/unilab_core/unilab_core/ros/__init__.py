# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The node edge: the only part of unilab_core that imports rclpy and messages."""
