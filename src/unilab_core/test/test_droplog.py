# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""DropLog: every drop counted, the first per kind logged, then at most one line per period."""

from unilab_core.droplog import DropLog


def test_first_drop_logged_then_rate_limited_per_kind():
    now = [0.0]
    log = DropLog(period_s=10.0, clock=lambda: now[0])
    lines = []
    for t in range(25):  # 2.5 s apart: 25 drops of one kind over 60 s
        now[0] = 2.5 * t
        lines.append(log.drop('imu/nonfinite_imu', f'sample {t}'))
    assert log.counts == {'imu/nonfinite_imu': 25} and log.total == 25
    said = [(i, line) for i, line in enumerate(lines) if line]
    assert [i for i, _ in said] == [0, 4, 8, 12, 16, 20, 24]  # t = 0, 10, 20, ... s
    assert said[0][1].startswith('dropping invalid imu/nonfinite_imu: sample 0')
    assert said[1][1] == ('dropped 4 invalid imu/nonfinite_imu in the last 10 s (5 in all); '
                          'latest: sample 4')
    assert log.logged == {'imu/nonfinite_imu': 7}
    # Another kind has its own first line at once.
    assert log.drop('pointcloud/empty', 'all NaN').startswith('dropping invalid pointcloud')
    assert log.drop('pointcloud/empty', 'all NaN') is None
    assert log.counts['pointcloud/empty'] == 2 and log.total == 27
