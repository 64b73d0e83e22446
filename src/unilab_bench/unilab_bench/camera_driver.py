# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
A camera + IMU driver double: frames as ``sensor_msgs/Image``, rates as ``sensor_msgs/Imu``.

It plays the part of a robot's camera and IMU drivers for ``factory live`` (its test
and ``bench factory``), through the same standard topics, in its own rclpy context so it
can run beside the node under test in one process.
"""

from __future__ import annotations

import threading
import time

import numpy as np


def _stamp(header, stamp_ns: int) -> None:
    header.stamp.sec, header.stamp.nanosec = divmod(int(stamp_ns), 1_000_000_000)


def image_msg(img: np.ndarray, stamp_ns: int, frame_id: str, encoding: str = 'rgb8',
              cut: int = 0):
    """Return an Image of an [H, W, 3] uint8 frame (``cut`` bytes short: a broken one)."""
    from sensor_msgs.msg import Image
    m = Image()
    _stamp(m.header, stamp_ns)
    m.header.frame_id = frame_id
    m.height, m.width = img.shape[:2]
    m.encoding, m.step = encoding, img.shape[1] * 3
    data = img.tobytes()
    m.data = data[:len(data) - cut]
    return m


def imu_msg(stamp_ns: int, gyro):
    """Return an Imu with angular velocity ``gyro`` (rad/s) and an identity orientation."""
    from sensor_msgs.msg import Imu
    m = Imu()
    _stamp(m.header, stamp_ns)
    m.orientation.w = 1.0
    m.angular_velocity.x, m.angular_velocity.y, m.angular_velocity.z = (float(g) for g in gyro)
    return m


class CameraDriver(threading.Thread):
    """
    Publish ``frames`` at ``rate_hz`` and IMU samples ``imu_per_frame`` times as often.

    Waits until both topics have a subscriber (at most ``wait_s``) and ``settle_s`` more,
    then ``started`` is set; a broken frame goes first when ``broken_first``. Odd frames
    go as rgb8, even as bgr8 (channels swapped), so both encodings are exercised. IMU
    stamps fall between the frames' (2 ms before each frame, then every period /
    ``imu_per_frame``), as a 200 Hz IMU beside a 30 Hz camera does.
    """

    def __init__(self, frames, rate_hz: float = 20.0, gyro=(0.5, 0.0, 0.0),
                 topic: str = '/camera/image_raw', imu_topic: str = '/imu/data',
                 broken_first: bool = False, wait_s: float = 30.0, imu_per_frame: int = 6,
                 settle_s: float = 0.5):
        super().__init__(daemon=True)
        self.settle_s = float(settle_s)
        self.frames, self.period = list(frames), 1.0 / rate_hz
        self.imu_per_frame = max(1, int(imu_per_frame))
        self.gyro, self.topic, self.imu_topic = gyro, topic, imu_topic
        self.broken_first, self.wait_s = broken_first, wait_s
        self.started = threading.Event()
        self.sent = 0
        self.error: str = ''

    def stamp_of(self, k: int) -> int:
        """Return the stamp (ns) of frame ``k``."""
        return 1_000_000_000 + int(k * self.period * 1e9)

    def run(self) -> None:
        """Publish every frame (in its own context), then shut that context down."""
        import rclpy
        from sensor_msgs.msg import Image, Imu
        ctx = rclpy.Context()
        ctx.init()
        try:
            node = rclpy.create_node('camera_driver_double', context=ctx)
            cam = node.create_publisher(Image, self.topic, 10)
            imu = node.create_publisher(Imu, self.imu_topic, 50)
            deadline = time.monotonic() + self.wait_s
            while cam.get_subscription_count() < 1 or imu.get_subscription_count() < 1:
                if time.monotonic() > deadline:
                    self.error = f'nobody subscribed to {self.topic} and {self.imu_topic}'
                    return
                time.sleep(0.05)
            time.sleep(self.settle_s)  # matched both ways (and readers further down set up)
            self.started.set()
            if self.broken_first:
                cam.publish(image_msg(self.frames[0], 1, 'broken', cut=7))
            t_next = time.monotonic()
            step = self.period / self.imu_per_frame
            for k, img in enumerate(self.frames):
                stamp = self.stamp_of(k)
                imu.publish(imu_msg(stamp - 2_000_000, self.gyro))
                rgb = k % 2 == 1
                cam.publish(image_msg(img if rgb else np.ascontiguousarray(img[..., ::-1]),
                                      stamp, f'cam{k}', 'rgb8' if rgb else 'bgr8'))
                self.sent += 1
                for j in range(1, self.imu_per_frame + 1):  # the IMU runs on between frames
                    t_next += step
                    time.sleep(max(0.0, t_next - time.monotonic()))
                    if j < self.imu_per_frame:
                        imu.publish(imu_msg(stamp + int(j * step * 1e9), self.gyro))
            node.destroy_node()
        finally:
            ctx.try_shutdown()
