# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
Compiled-model cache: an MJCF file compiled once, then loaded as MuJoCo's binary ``.mjb``.

The cache key is a SHA-256 over the MuJoCo version and the bytes of the XML and of every
file it references (``<include>``, meshes, textures, height fields, skins: any ``file=``
attribute, in included files too), so any edit to any of them, or another MuJoCo, gives a
new entry; a stale model can never be loaded. A reference the cache cannot resolve makes the
model uncacheable (it is compiled every time) rather than risking staleness. Entries are
written atomically (temp file + rename), so concurrent processes see a whole file or none.

Environment: ``UNILAB_CACHE_DIR`` (default ``$XDG_CACHE_HOME/unilab`` or
``~/.cache/unilab``; models go to its ``mjb/``), ``UNILAB_MODEL_CACHE=0`` switches it off.
Saving is best effort: an unwritable cache directory only costs the compile next time.
"""

from __future__ import annotations

import hashlib
import os
import pathlib
import xml.etree.ElementTree as ET

import mujoco
from unilab_core.atomic import atomic_path

_DIR_ATTRS = ('meshdir', 'texturedir', 'assetdir')


def cache_dir() -> pathlib.Path:
    """Return the directory compiled models are stored in."""
    root = os.environ.get('UNILAB_CACHE_DIR')
    if not root:
        xdg = os.environ.get('XDG_CACHE_HOME') or pathlib.Path.home() / '.cache'
        root = pathlib.Path(xdg) / 'unilab'
    return pathlib.Path(root) / 'mjb'


def _referenced(xml_path: pathlib.Path) -> list[pathlib.Path] | None:
    """
    Return every file the model reads besides ``xml_path``, or None if one cannot be found.

    MuJoCo resolves ``<include file>`` against the main file's directory and assets against
    the compiler's meshdir/texturedir/assetdir (themselves relative to the main file); every
    existing candidate path is hashed, which can only make the key stricter.
    """
    base = xml_path.parent
    names, dirs, todo, seen = [], [''], [xml_path], set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        try:
            root = ET.parse(path).getroot()
        except (OSError, ET.ParseError):
            return None
        for el in root.iter():
            if el.tag == 'compiler':
                dirs += [el.attrib[a] for a in _DIR_ATTRS if a in el.attrib]
            if 'file' in el.attrib:
                if el.tag == 'include':
                    # Main file's directory (MuJoCo's rule) or the including file's.
                    cands = {b / el.attrib['file'] for b in (base, path.parent)}
                    todo += [c for c in cands if c.is_file()]
                    if not any(c.is_file() for c in cands):
                        return None
                else:
                    names.append(el.attrib['file'])
    files = sorted(p for p in seen if p != xml_path)
    for name in names:
        found = [base / d / name for d in dirs if (base / d / name).is_file()]
        if not found:
            return None
        files += found
    return files


def model_key(xml_path: str | pathlib.Path) -> str | None:
    """Return the cache key of an MJCF file, or None if it cannot be cached safely."""
    xml_path = pathlib.Path(xml_path).resolve()
    files = _referenced(xml_path)
    if files is None:
        return None
    h = hashlib.sha256(f'mujoco {mujoco.__version__}\n'.encode())
    for path in [xml_path] + files:
        h.update(f'{os.path.relpath(path, xml_path.parent)}\n'.encode())
        h.update(path.read_bytes())
    return h.hexdigest()


def load_model(xml_path: str | pathlib.Path) -> mujoco.MjModel:
    """Load an MJCF model through the compiled-model cache (see the module docstring)."""
    if os.environ.get('UNILAB_MODEL_CACHE', '1') == '0':
        return mujoco.MjModel.from_xml_path(str(xml_path))
    key = model_key(xml_path)
    if key is None:
        return mujoco.MjModel.from_xml_path(str(xml_path))
    entry = cache_dir() / f'{pathlib.Path(xml_path).stem}-{key[:32]}.mjb'
    if entry.is_file():
        try:
            return mujoco.MjModel.from_binary_path(str(entry))
        except ValueError:
            pass  # unreadable (e.g. truncated by a full disk): compile and replace it
    model = mujoco.MjModel.from_xml_path(str(xml_path))
    try:
        with atomic_path(entry) as tmp:
            mujoco.mj_saveModel(model, str(tmp), None)
    except OSError:
        pass
    return model
