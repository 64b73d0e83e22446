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


def yaml_error(path, exc: BaseException) -> str:
    """
    Return one line ``FILE:LINE:COLUMN: not valid YAML: PROBLEM (CONTEXT at line L, column C)``.

    PyYAML's own text spans several lines, quotes the offending source line and
    ends with a caret line; a user needs the file, where in it, and what is
    wrong. ``exc`` is a ``yaml.YAMLError``; a marked one (a scanner, parser or
    constructor error) carries the 0-based ``problem_mark`` / ``context_mark``.
    ``path`` None: the name the parser gave the stream.
    """
    problem = getattr(exc, 'problem', None)
    mark = getattr(exc, 'problem_mark', None)
    context, context_mark = getattr(exc, 'context', None), getattr(exc, 'context_mark', None)
    if path is None:  # the stream's own name (a file object's, or '<unicode string>')
        path = getattr(mark or context_mark, 'name', None) or '<input>'
    if problem is None:  # not a marked error: its own text, on one line
        return f'{path}: not valid YAML: ' + ' '.join(str(exc).split())
    where = f'{path}:{mark.line + 1}:{mark.column + 1}' if mark is not None else f'{path}'
    text = f'{where}: not valid YAML: {problem}'
    if context:
        text += f' ({context}'
        if context_mark is not None:
            text += f' at line {context_mark.line + 1}, column {context_mark.column + 1}'
        text += ')'
    return ' '.join(text.split())
