# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""ament linters and the project's copyright / package.xml checks."""

import pathlib

import pytest

from unilab_core.lint import check_copyright, check_package_xml

PKG = pathlib.Path(__file__).resolve().parents[1]


@pytest.mark.flake8
@pytest.mark.linter
def test_flake8():
    from ament_flake8.main import main_with_errors
    rc, errors = main_with_errors(argv=[str(PKG)])
    assert rc == 0, 'Found %d code style errors / warnings:\n' % len(errors) + '\n'.join(errors)


@pytest.mark.linter
@pytest.mark.pep257
def test_pep257():
    from ament_pep257.main import main
    rc = main(argv=[str(PKG), str(PKG / 'test')])
    assert rc == 0, 'Found code style errors / warnings'


@pytest.mark.copyright
@pytest.mark.linter
def test_copyright():
    assert check_copyright(PKG) == []


@pytest.mark.linter
@pytest.mark.xmllint
def test_package_xml():
    assert check_package_xml(PKG / 'package.xml') == []
