# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The review page in a real browser: headless Chromium driven by selenium.

Needs the ``selenium`` package and Debian's ``chromium`` and ``chromium-driver``; where
one is missing the test skips and names it.
"""

import shutil
import threading

import pytest
from unilab_datafactory.image_bag import write_image_bag
from unilab_datafactory.label import label_bag
from unilab_datafactory.review_server import make_server
from unilab_datafactory.store import SampleStore
from unilab_datafactory.testing import frame_with_score, stub_detector


def _browser():
    missing = [what for what, ok in (
        ('the selenium package (pip install selenium)', _has_selenium()),
        ('chromium (apt-get install chromium)', shutil.which('chromium')),
        ('chromedriver (apt-get install chromium-driver)', shutil.which('chromedriver')))
        if not ok]
    if missing:
        pytest.skip('review page browser test needs ' + ', '.join(missing))
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service
    opts = webdriver.ChromeOptions()
    opts.binary_location = shutil.which('chromium')
    for arg in ('--headless=new', '--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage',
                '--window-size=800,700'):
        opts.add_argument(arg)
    return webdriver.Chrome(service=Service(shutil.which('chromedriver')), options=opts)


def _has_selenium():
    try:
        import selenium  # noqa: F401
    except ImportError:
        return False
    return True


def test_accept_and_correct_with_the_keyboard(tmp_path):
    bag = write_image_bag(tmp_path / 'bag', [frame_with_score(s) for s in (0.55, 0.6, 0.65)])
    label_bag(bag, stub_detector(), tmp_path / 'store')
    server = make_server(tmp_path / 'store', port=0)
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    driver = _browser()
    try:
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.by import By
        from selenium.webdriver.support.ui import WebDriverWait
        wait = WebDriverWait(driver, 20)
        driver.get(f'http://127.0.0.1:{server.server_address[1]}/')

        def frame():
            return driver.find_element(By.ID, 'frame').text
        wait.until(lambda d: frame() == 'frame-0000000')  # lowest confidence first
        body = driver.find_element(By.TAG_NAME, 'body')
        body.send_keys('a')
        wait.until(lambda d: frame() == 'frame-0000001')
        # Class 2, drag a box on the (4x scaled) image, save the correction.
        body.send_keys('2')
        canvas = driver.find_element(By.ID, 'view')
        ActionChains(driver).move_to_element_with_offset(canvas, -200, -140).click_and_hold() \
            .move_by_offset(80, 60).release().perform()
        body.send_keys('c')
        wait.until(lambda d: frame() == 'frame-0000002')
        body.send_keys('r')
        wait.until(lambda d: frame() == 'none')
    finally:
        driver.quit()
        server.shutdown()
        server.server_close()
    store = SampleStore(tmp_path / 'store')
    decisions = [m['decision'] for m in store.manifests()]
    assert decisions == ['accepted', 'corrected', 'rejected']
    t, m = store.read('frame-0000001')
    assert sorted(t['labels'].tolist()) == [0, 1] and m['proposed']['labels'] == [0]
    box = t['boxes'][t['labels'].tolist().index(1)]
    # 80 x 60 screen pixels at 512 / 48 screen pixels per image pixel.
    assert box[2] - box[0] == pytest.approx(80 * 48 / 512, abs=0.5)
    assert box[3] - box[1] == pytest.approx(60 * 48 / 512, abs=0.5)
