# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""UniLab live view: the robot, its command and the safety gate, in a browser."""
