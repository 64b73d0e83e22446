# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""``unilab factory``: unusable input exits 2 with one line; label and score run end to end."""

import json

import pytest
import torch
from unilab.cli import main
from unilab_datafactory.image_bag import write_image_bag
from unilab_datafactory.testing import (CLASSES, frame_with_score, ground_truth_store, H,
                                        StubModule, W)
from unilab_datafactory.train_detector import train_detector


#: The stub detector as a user's TorchScript file.
STUB = ('--detector', '{tmp}/det.ts', '--classes', ','.join(CLASSES), '--input-size',
        f'{H}x{W}')


def _run(capsys, *args):
    code = main(['factory', *map(str, args)])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize('args, needle', [
    (('label', '{tmp}/nobag', '--out', '{tmp}/s', '--detector', '{tmp}/det'), 'no such file'),
    (('score', '{tmp}/nostore', '--detector', '{tmp}/det/v0001.pt'), 'no such file'),
    (('export', '{tmp}/nostore', '{tmp}/out'), 'not a sample store'),
    (('label', '{tmp}/bag', '--out', '{tmp}/s', '--detector', '{tmp}/det.onnx',
      '--input-size', '96x128'), 'no such file'),
    (('label', '{tmp}/bag', '--out', '{tmp}/s', '--topic', '/x', *STUB), 'no topic `/x`'),
    (('label', '{tmp}/bag', '--out', '{tmp}/s', '--threshold', '1.5', *STUB),
     '--threshold 1.5'),
    (('label', '{tmp}/bag', '--out', '{tmp}/s', '--detector', '{tmp}/det.ts'), '--classes'),
    (('render', '{tmp}/r', '--size', 'big'), 'expected HEIGHTxWIDTH'),
    (('finetune', '{tmp}/empty', '--reviewed', '{tmp}/gt'), 'no detector versions'),
])
def test_unusable_input_exits_2_in_one_line(tmp_path, capsys, args, needle):
    (tmp_path / 'empty').mkdir()
    torch.jit.trace(StubModule(), torch.zeros(1, 3, H, W)).save(str(tmp_path / 'det.ts'))
    write_image_bag(tmp_path / 'bag', [frame_with_score(0.9)])
    code, _, err = _run(capsys, *(a.format(tmp=tmp_path) for a in args))
    assert code == 2 and needle in err and 'Traceback' not in err
    assert len(err.strip().splitlines()) == 1, err


def test_label_and_score_commands(tmp_path, capsys):
    gt = ground_truth_store(tmp_path / 'gt', 8).root
    train_detector([gt], tmp_path / 'det', epochs=1, batch=8, width=8, log=None)
    bag = write_image_bag(tmp_path / 'bag', [frame_with_score(s) for s in (0.9, 0.1)])
    code, out, _ = _run(capsys, 'label', bag, '--out', tmp_path / 's', '--detector',
                        tmp_path / 'det', '--threshold', '0.6')
    summary = json.loads(out)
    assert code == 0 and summary['auto'] + summary['pending'] == 2
    assert summary['detector'] == 'v0001'
    code, out, _ = _run(capsys, 'score', gt, '--detector', tmp_path / 'det', '--json',
                        tmp_path / 'score.json')
    assert code == 0 and json.loads(out)['frames'] == 8
    saved = json.loads((tmp_path / 'score.json').read_text())
    assert len(saved['pr_curve']) == 19 and saved['detector'] == 'v0001'
