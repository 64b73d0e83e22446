# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""Error text for users: one line, whatever the library behind it printed."""

from __future__ import annotations


def one_line(exc: BaseException, limit: int = 300) -> str:
    """
    Return ``Type: message`` on one line, at most ``limit`` characters.

    torch, sqlite and pydantic put line breaks and tabs into their messages;
    a command that refuses a file says why in one line.
    """
    text = f'{type(exc).__name__}: ' + ' '.join(str(exc).split())
    return text if len(text) <= limit else text[:limit - 3] + '...'
