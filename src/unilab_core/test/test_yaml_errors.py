# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""A broken YAML file is refused in one line naming the file, line, column and problem."""

import pytest
from unilab_core.config import ConfigError, read_yaml
from unilab_core.errors import yaml_error
import yaml

# Line 2 opens a flow sequence that line 3 breaks: PyYAML's own text spans five lines
# and ends with a caret line.
BROKEN = 'run:\n  task: [arm6\n  seed: 1\n'
EXPECTED = (":3:7: not valid YAML: expected ',' or ']', but got ':' "
            '(while parsing a flow sequence at line 2, column 9)')


def test_a_marked_error_becomes_one_line_with_file_line_and_column():
    with pytest.raises(yaml.YAMLError) as info:
        yaml.safe_load(BROKEN)
    assert yaml_error('cfg.yaml', info.value) == 'cfg.yaml' + EXPECTED
    # Without a path: the name the parser gave the stream.
    assert yaml_error(None, info.value) == '<unicode string>' + EXPECTED


def test_an_unmarked_error_keeps_its_text_on_one_line():
    text = yaml_error('f.yaml', yaml.YAMLError('bad\n  thing'))
    assert text == 'f.yaml: not valid YAML: bad thing'


def test_read_yaml_names_the_place(tmp_path):
    path = tmp_path / 'bad.yaml'
    path.write_text(BROKEN)
    with pytest.raises(ConfigError) as info:
        read_yaml(path)
    assert str(info.value) == f'{path}' + EXPECTED
    assert '\n' not in str(info.value) and '^' not in str(info.value)
