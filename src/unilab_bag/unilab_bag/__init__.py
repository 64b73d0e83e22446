# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Rosbag2 recording, replay, inspection and offline datasets (``rosbags``, no rosbag2_py).

``types`` builds the type store (ROS 2 Kilted + our interfaces), ``storage``
writes and reads bags (MCAP or sqlite3) and recovers killed recordings,
``info`` summarises a bag, ``dataset`` turns bags into transitions. The thin
ROS edges are ``recorder_node`` and ``player_node``.
"""
