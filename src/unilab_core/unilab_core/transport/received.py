# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
What a reader hands out for one message: its descriptor and views, plus the slot to give back.

Host rings (``channel.TensorReader``) and device rings
(``cuda.CudaTensorReader``) both return it, so it lives apart from either.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from unilab_core.transport.descriptor import Descriptor
from unilab_core.transport.ring_reader import Message


@dataclasses.dataclass
class Received:
    """Views of one message; call ``release()`` (or use ``with``) when done with them."""

    descriptor: Descriptor
    tensors: dict[str, Any]
    #: the held slot (anything with ``release() -> bool``; None for nothing to give back)
    message: Message | None = None

    def release(self) -> bool:
        """Give the slot back to the writer; return whether it stayed intact."""
        if self.message is None:
            return True
        return self.message.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()
