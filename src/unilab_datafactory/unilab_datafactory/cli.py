# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
``unilab factory ...``: render, train, label (bags or live topics), review, export.

The subcommands: render, train-detector, label, live, review, finetune, score, export.

``plot`` and ``show`` draw the figures of docs/factory.md.

A user's input that cannot be used (a bad store, bag, detector file, option) exits 2 with
one line; ``render`` exits 1 where offscreen rendering is unavailable.
"""

from __future__ import annotations

import json
import sys

from unilab_datafactory.capture import FrameQueue, quat_matrix
from unilab_datafactory.review_server import make_server
from unilab_datafactory.schedule import finetune_if_due, watch
from unilab_datafactory.store import StoreError


def _fail(msg: str) -> int:
    print('unilab: factory: ' + ' '.join(str(msg).split()), file=sys.stderr)
    return 2


def _log(line: str) -> None:
    print('unilab: ' + line, file=sys.stderr, flush=True)  # stdout carries the JSON


def _size(text: str) -> tuple[int, int]:
    try:
        h, w = (int(v) for v in text.lower().split('x'))
    except ValueError:
        raise ValueError(f'size `{text}`: expected HEIGHTxWIDTH, e.g. 96x128') from None
    return h, w


def _detector(args):
    from unilab_datafactory.train_detector import open_detector
    classes = args.classes.split(',') if args.classes else None
    size = _size(args.input_size) if args.input_size else None
    return open_detector(args.detector, classes=classes, input_size=size)


def _render(args):
    from unilab_datafactory.render import render_store
    try:
        import unilab_datafactory.scene  # noqa: F401 - fail on imports before the EGL check
        out = render_store(args.out, args.frames, args.variant, args.seed, _size(args.size),
                           shadows=args.shadows)
    except (ImportError, RuntimeError, OSError) as exc:
        if isinstance(exc, (FileNotFoundError, PermissionError)):
            raise
        print(f'unilab: factory: rendering unavailable ({exc}); MuJoCo needs EGL',
              file=sys.stderr)
        return 1
    print(json.dumps(out, indent=2))


def _train(args):
    from unilab_datafactory.train_detector import train_detector
    rec = train_detector(args.train, args.out, args.eval, args.epochs, args.batch,
                         seed=args.seed, width=args.width, log=_log, arch=args.arch,
                         calibrate_roots=args.calibrate)
    print(json.dumps(rec, indent=2))


def _finetune(args):
    import pathlib
    from unilab_datafactory.train_detector import latest_version, train_detector
    is_dir = pathlib.Path(args.detector).is_dir()
    out = args.detector if is_dir else pathlib.Path(args.detector).parent

    def train(init, extra=None):
        return train_detector(list(args.reviewed) + list(args.replay), out, args.eval,
                              args.epochs, args.batch, lr=args.lr, seed=args.seed, init=init,
                              decisions=('ground_truth', 'accepted', 'corrected'), log=_log,
                              extra=extra, calibrate_roots=args.calibrate)
    if args.every is None:
        if args.watch:
            raise ValueError('--watch needs --every N (new reviewed samples per version)')
        init = latest_version(args.detector) if is_dir else args.detector
        print(json.dumps(train(str(init)), indent=2))
        return
    if not is_dir:
        raise ValueError(f'--every: {args.detector} must be a detector directory (its '
                         'versions are compared with the reviewed samples)')
    if args.watch:
        records = watch(args.detector, args.reviewed, args.every, train, args.poll,
                        args.duration, log=_log)
    else:
        record = finetune_if_due(args.detector, args.reviewed, args.every, train, log=_log)
        records = [record] if record is not None else []
    print(json.dumps({'versions': [r['version'] for r in records], 'records': records},
                     indent=2))


def _label(args):
    from unilab_datafactory.label import label_bag
    print(json.dumps(label_bag(args.bag, _detector(args), args.out, args.topic,
                               args.threshold), indent=2))


def _live(args):
    from unilab_datafactory.live import run_live
    try:
        q = tuple(float(v) for v in args.imu_to_camera.split(','))
    except ValueError:
        raise ValueError(f'--imu-to-camera {args.imu_to_camera}: expected x,y,z,w') from None
    if args.duration < 0 or args.imu_tolerance < 0 or args.imu_wait < 0:
        raise ValueError('--duration, --imu-tolerance and --imu-wait must be >= 0')
    quat_matrix(q), FrameQueue(args.queue)  # refuse bad values before anything starts
    if args.role != 'capture' and not (args.out and args.detector):
        raise ValueError(f'--role {args.role}: needs --out STORE and --detector')
    detector = _detector(args) if args.role != 'capture' else None
    reload = None
    if args.reload is not None:
        import pathlib
        from unilab_datafactory.detector import load_detector
        from unilab_datafactory.schedule import Reloader
        if args.role == 'capture' or not pathlib.Path(args.detector).is_dir():
            raise ValueError('--reload: needs --detector DIR (a detector directory) and a '
                             'labelling role')
        classes = args.classes.split(',') if args.classes else None
        size = _size(args.input_size) if args.input_size else None
        reload = Reloader(args.detector, args.reload,
                          lambda path: load_detector(path, classes=classes, input_size=size))
    print(json.dumps(run_live(args.topic, detector, args.out, args.imu, args.threshold,
                              args.duration, args.queue, q, args.imu_tolerance, log=_log,
                              role=args.role, imu_wait_s=args.imu_wait, reload=reload),
                     indent=2))


def _score(args):
    from unilab_datafactory.score import score_pseudo_labels
    out = score_pseudo_labels(_detector(args), args.stores, args.threshold,
                              curve=bool(args.json))
    if args.json:
        from unilab_core.atomic import atomic_write_text
        atomic_write_text(args.json, json.dumps(out, indent=2))
    print(json.dumps({k: v for k, v in out.items() if not isinstance(v, list)}, indent=2))


def _plot(args):
    from unilab_datafactory.figures import plot_pr
    curves = {}
    for path in args.scores:
        with open(path) as f:
            s = json.load(f)
        if 'pr_curve' not in s:
            raise ValueError(f'{path}: no pr_curve (write it with `factory score --json`)')
        curves[f'{s["detector"]} ({path})'] = s['pr_curve']
    plot_pr(curves, args.out)
    print(f'unilab: wrote {args.out}')


def _show(args):
    from unilab_datafactory.figures import plot_frames
    plot_frames(args.store, args.out, args.count)
    print(f'unilab: wrote {args.out}')


def _review(args):
    import webbrowser
    server = make_server(args.store, args.port)
    url = f'http://127.0.0.1:{server.server_address[1]}/'
    print(f'unilab: review queue of {args.store} at {url} (Ctrl-C to stop)', flush=True)
    if not args.no_browser:
        webbrowser.open(url)
    try:
        server.serve_forever()
    finally:
        server.server_close()


def _export(args):
    from unilab_datafactory.augment import AugmentConfig
    from unilab_datafactory.augmented_export import export_store
    cfg = AugmentConfig(exposure_s=args.exposure, noise_std=args.noise)
    print(json.dumps(export_store(args.store, args.out, args.copies, args.seed, args.device,
                                  cfg, args.gyro_std), indent=2))


def _run(args) -> int:
    try:
        return args.factory_func(args) or 0
    except (StoreError, ValueError, FileNotFoundError, KeyError) as exc:
        return _fail(exc)


def add_commands(sub) -> None:
    """Add ``factory`` and its subcommands to the ``unilab`` parser."""
    f = sub.add_parser('factory', help='camera frames to reviewed, augmented training '
                       'tensors (docs/factory.md)')
    fs = f.add_subparsers(dest='factory_command', required=True)

    def cmd(name, func, help_text):
        p = fs.add_parser(name, help=help_text)
        p.set_defaults(func=_run, factory_func=func)
        return p

    def detector_opts(p, required=True):
        p.add_argument('--detector', required=required, metavar='DIR|FILE',
                       help='detector directory (its latest version), a version .pt, a '
                       'TorchScript .ts or an ONNX file')
        p.add_argument('--classes', help='class names, comma-separated (.ts / .onnx)')
        p.add_argument('--input-size', metavar='HxW', help='model input size (.ts / .onnx)')
        p.add_argument('--threshold', type=float, default=None,
                       help='frames below this confidence go to review (default: the '
                       "version's calibrated threshold, else 0.7)")

    r = cmd('render', _render, 'render the arm with exact boxes into a sample store')
    r.add_argument('out', help='store directory (created; more frames are appended)')
    r.add_argument('--frames', type=int, default=500)
    r.add_argument('--variant', choices=('sim', 'real'), default='sim',
                   help='real: held-out light, colours and sensor noise')
    r.add_argument('--seed', type=int, default=0)
    r.add_argument('--size', default='96x128', metavar='HxW',
                   help='the bridge\'s camera: 48x64 (with --shadows)')
    r.add_argument('--shadows', action='store_true', help='render shadows, as the bridge does')

    t = cmd('train-detector', _train, 'train a detector version on rendered stores')
    t.add_argument('out', help='detector directory (versions v0001.pt, ... with scores)')
    t.add_argument('--train', nargs='+', required=True, metavar='STORE')
    t.add_argument('--eval', nargs='*', default=[], metavar='STORE',
                   help='held-out stores to score the version on')
    t.add_argument('--calibrate', nargs='*', default=[], metavar='STORE',
                   help='held-out ground-truth stores of the training domain: the version '
                   'keeps the confidence at which they are auto-accepted with precision 0.95')
    t.add_argument('--epochs', type=int, default=30)
    t.add_argument('--batch', type=int, default=64)
    t.add_argument('--width', type=int, default=32, help='channels of the first blocks')
    t.add_argument('--arch', default='centers',
                   help='architecture (docs/factory.md): `centers` (centre heatmaps, the '
                        'default) or `slots` (the first, fully connected slots)')
    t.add_argument('--seed', type=int, default=0)

    ft = cmd('finetune', _finetune, 'fine-tune the latest version on reviewed samples')
    ft.add_argument('detector', metavar='DIR', help='detector directory (or a version .pt)')
    ft.add_argument('--reviewed', nargs='+', required=True, metavar='STORE',
                    help='stores with accepted / corrected samples')
    ft.add_argument('--replay', nargs='*', default=[], metavar='STORE',
                    help='ground-truth stores mixed in, so earlier skills are kept')
    ft.add_argument('--eval', nargs='*', default=[], metavar='STORE')
    ft.add_argument('--calibrate', nargs='*', default=[], metavar='STORE',
                    help='held-out ground-truth stores of the training domain: the version '
                    'keeps the confidence at which they are auto-accepted with precision 0.95')
    ft.add_argument('--epochs', type=int, default=5)
    ft.add_argument('--batch', type=int, default=64)
    ft.add_argument('--lr', type=float, default=5e-4)
    ft.add_argument('--seed', type=int, default=0)
    ft.add_argument('--every', type=int, metavar='N',
                    help='only when N or more reviewed samples are new since the latest '
                    'version (the scheduler; DIR must be a detector directory)')
    ft.add_argument('--watch', action='store_true',
                    help='with --every: keep checking every --poll s (Ctrl-C stops)')
    ft.add_argument('--poll', type=float, default=30.0, help='--watch: s between checks')
    ft.add_argument('--duration', type=float, default=0.0,
                    help='--watch: s to run (0: until Ctrl-C)')

    lb = cmd('label', _label, 'pseudo-label a bag\'s images; unsure frames go to review')
    lb.add_argument('bag')
    lb.add_argument('--out', required=True, metavar='STORE')
    lb.add_argument('--topic', default='/camera/image_raw')
    detector_opts(lb)

    lv = cmd('live', _live, 'pseudo-label a camera topic while the robot runs (Ctrl-C stops)')
    lv.add_argument('--out', metavar='STORE', help='the store (not with --role capture)')
    lv.add_argument('--role', choices=('both', 'capture', 'label'), default='both',
                    help='capture: only camera + IMU -> /unilab/factory/frames (shared '
                    'memory); label: only that topic -> the store; both (one process)')
    lv.add_argument('--topic', default='/camera/image_raw',
                    help='sensor_msgs/Image, or CompressedImage for a topic ending in '
                    '/compressed')
    lv.add_argument('--imu', default='/imu/data',
                    help='sensor_msgs/Imu whose rate is attached to each frame ("" = none)')
    lv.add_argument('--imu-to-camera', default='0,0,0,1', metavar='X,Y,Z,W',
                    help='rotation from the IMU frame to the camera frame (identity)')
    lv.add_argument('--imu-tolerance', type=float, default=0.02,
                    help='s between a frame and the IMU sample attached to it (0.02)')
    lv.add_argument('--imu-wait', type=float, default=0.1,
                    help='s a frame waits at most for an IMU sample after its stamp (0.1)')
    lv.add_argument('--queue', type=int, default=8,
                    help='frames waiting for the detector; the oldest is dropped, counted')
    lv.add_argument('--duration', type=float, default=0.0, help='s to run (0: until Ctrl-C)')
    lv.add_argument('--reload', type=float, metavar='S',
                    help='check the detector directory every S s and label with a newer '
                    'version from the next frame (`finetune --every N --watch` writes them)')
    detector_opts(lv, required=False)

    sc = cmd('score', _score, 'pseudo-labels against ground truth, with a simulated review')
    sc.add_argument('stores', nargs='+', metavar='STORE', help='ground-truth stores')
    sc.add_argument('--json', metavar='FILE', help='write the figures and PR curve here')
    detector_opts(sc)

    pl = cmd('plot', _plot, 'precision-recall plot of `factory score --json` files')
    pl.add_argument('scores', nargs='+', metavar='SCORE.json')
    pl.add_argument('--out', default='factory_pr.png')

    sh = cmd('show', _show, 'draw a store\'s first frames with their boxes to a PNG')
    sh.add_argument('store')
    sh.add_argument('--out', default='factory_frames.png')
    sh.add_argument('--count', type=int, default=8)

    rv = cmd('review', _review, 'serve the review page for a store (keyboard: A R C 1-9)')
    rv.add_argument('store')
    rv.add_argument('--port', type=int, default=8765, help='0: any free port')
    rv.add_argument('--no-browser', action='store_true', help='do not open a browser')

    ex = cmd('export', _export, 'write augmented copies of usable samples to a new store')
    ex.add_argument('store')
    ex.add_argument('out')
    ex.add_argument('--copies', type=int, default=1)
    ex.add_argument('--seed', type=int, default=0)
    ex.add_argument('--device', default='cpu', help='cpu | cuda | auto')
    ex.add_argument('--exposure', type=float, default=0.01, help='blur exposure (s); 0: off')
    ex.add_argument('--noise', type=float, default=0.02, help='pixel noise std (0..1 scale)')
    ex.add_argument('--gyro-std', type=float, default=1.0,
                    help='rad/s drawn per axis where a frame has no gyro_cam')
