# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""The project's own copyright and package.xml checks."""

from unilab_core.lint import check_copyright, check_package_xml


def test_copyright_flags_files_without_header(tmp_path):
    (tmp_path / 'ok.py').write_text('# Copyright 2026 X\n# SPDX-License-Identifier: Apache-2.0\n')
    (tmp_path / 'bad.py').write_text('print(1)\n')
    problems = check_copyright(tmp_path)
    assert len(problems) == 1 and 'bad.py' in problems[0]


def test_package_xml_checks(tmp_path):
    pkg = tmp_path / 'demo'
    pkg.mkdir()
    (pkg / 'package.xml').write_text(
        '<package format="3"><name>other</name><version>1</version>'
        '<description>d</description><maintainer email="a@b">m</maintainer>'
        '<license>Apache-2.0</license></package>')
    problems = check_package_xml(pkg / 'package.xml')
    assert any('build_type' in p for p in problems)
    assert any('differs from folder demo' in p for p in problems)
    (pkg / 'package.xml').write_text('<package format="3"><name>')
    assert 'not well-formed' in check_package_xml(pkg / 'package.xml')[0]
