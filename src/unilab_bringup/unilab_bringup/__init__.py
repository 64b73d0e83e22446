# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""UniLab bringup: graphs, their preparation and starters, deploy, the ROS-free loops."""
