# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""ament linters and the project's copyright / package.xml checks."""

import pathlib

import pytest
from unilab_core import lint

PKG = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8():
    errors = lint.ament_flake8_errors(PKG)
    assert not errors, f'{len(errors)} code style errors:\n' + '\n'.join(errors)


@pytest.mark.linter
@pytest.mark.pep257
def test_pep257():
    assert lint.ament_pep257_rc(PKG) == 0, 'Found docstring style errors'


@pytest.mark.copyright
@pytest.mark.linter
def test_copyright():
    assert lint.check_copyright(PKG) == []


@pytest.mark.linter
@pytest.mark.xmllint
def test_package_xml():
    assert lint.check_package_xml(PKG / 'package.xml') == []
