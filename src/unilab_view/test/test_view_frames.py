# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The view takes the graph's messages once per screen frame: the newest, not every one."""

import time

import rclpy
from rclpy.executors import SingleThreadedExecutor
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from unilab_core.testing import isolate_ros_domain

isolate_ros_domain()  # before rclpy.init: this test's topics stay its own

BURST = 50  # messages between two frames: a 500 Hz broadcaster over a 10 Hz frame, say
WAIT_S = 20.0


def _wait(what, done):
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f'never: {what}'
        time.sleep(0.02)


def test_a_frame_takes_the_newest_state_and_command_not_every_message():
    from unilab_view.view_node import ViewNode
    rclpy.init()
    ns = '/view_frames'
    node = ViewNode([ns], port=0, host='127.0.0.1')
    executor = SingleThreadedExecutor()
    executor.add_node(node)
    talker = rclpy.create_node('view_frames_talker')
    js = talker.create_publisher(JointState, f'{ns}/joint_states', 10)
    cmd = talker.create_publisher(Float64MultiArray,
                                  f'{ns}/forward_position_controller/commands', 10)
    robot = node.robots[0]
    try:
        _wait('the view subscribed', lambda: js.get_subscription_count() > 0
              and cmd.get_subscription_count() > 0)
        node.frame(executor)  # whatever discovery brought, before the burst
        before = node.received
        for i in range(BURST):
            js.publish(JointState(name=['a', 'b'], position=[float(i), -float(i)]))
            cmd.publish(Float64MultiArray(data=[float(i) + 0.5, 0.0]))
        time.sleep(0.5)  # all of them delivered to the view's readers by now
        node.frame(executor)
        # One joint state and one command handed to Python: the newest of each.
        assert node.received - before == 2
        assert robot.measured == (['a', 'b'], [BURST - 1.0, -(BURST - 1.0)])
        assert robot.commanded == (None, [BURST - 0.5, 0.0])
        # Nothing waits for the next frame.
        node.frame(executor)
        assert node.received - before == 2
    finally:
        talker.destroy_node()
        executor.shutdown()
        node.close()
        node.destroy_node()
        rclpy.try_shutdown()


class _FrameRaises:
    """A view whose frame fails as a take does when a stop signal lands inside it."""

    rate_hz = 1000.0
    context = None

    def __init__(self, error):
        self.error = error
        self.frames = 0

    def frame(self, executor):
        self.frames += 1
        raise self.error


def test_a_stop_signal_inside_a_take_ends_the_frames_and_another_error_is_raised(monkeypatch):
    # Ctrl-C's KeyboardInterrupt raised inside rclpy's take comes out of the bindings as
    # this RuntimeError with the context still up: a stop when the handler recorded one.
    import pytest
    from unilab_core import stop
    from unilab_view import view_node
    monkeypatch.setattr(view_node.rclpy, 'ok', lambda context=None: True)
    taken = RuntimeError("Unable to convert call argument '0' to Python object")
    monkeypatch.setattr(stop, 'STOP_SIGNALS', [2])
    node = _FrameRaises(taken)
    view_node.spin_frames(node, None)  # returns: the loop sees the recorded stop
    assert node.frames == 0
    monkeypatch.setattr(stop, 'STOP_SIGNALS', [])
    with pytest.raises(RuntimeError, match='Unable to convert'):
        view_node.spin_frames(node, None)  # no stop recorded: a real error, raised
    assert node.frames == 1

    class _StopsInsideTake(_FrameRaises):
        def frame(self, executor):
            stop.note_stop_signal(2)  # the handler ran inside the take
            super().frame(executor)
    node = _StopsInsideTake(taken)
    view_node.spin_frames(node, None)
    assert node.frames == 1 and stop.STOP_SIGNALS == [2]
