# Copyright 2026 UniLab contributors
# SPDX-License-Identifier: Apache-2.0
"""
The review page (one self-contained HTML file; no framework, nothing fetched from outside).

Keys: A or Enter accept, R reject, 1..9 pick a class and drag on the image to draw its box
(replacing that class's box), Delete removes the picked class's box, C saves the edited
boxes as a correction, N / P next / previous frame. Element ids (``frame``, ``status``,
``count``) are what the browser test reads.
"""

PAGE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>UniLab review queue</title>
<style>
body{font-family:sans-serif;background:#222;color:#eee;margin:1em}
canvas{border:1px solid #888;cursor:crosshair;image-rendering:pixelated}
.keys{color:#aaa;font-size:90%} #status{min-height:1.2em;color:#9f9}
</style></head><body>
<h2>Review queue <span id="count"></span></h2>
<div class="keys">A/Enter accept &middot; R reject &middot; 1-9 pick class, drag to draw its
box &middot; Del remove picked box &middot; C save correction &middot; N/P next/previous</div>
<p>Frame <span id="frame">-</span> &middot; confidence <span id="conf">-</span>
&middot; class <span id="cls">-</span></p>
<canvas id="view" width="512" height="384"></canvas>
<p id="status"></p>
<script>
const COLORS = ['#f44', '#4f4', '#ff4', '#4cf', '#f4f', '#fa4', '#aaf', '#fff', '#8f8'];
let items = [], pos = 0, boxes = [], labels = [], pick = 0, img = new Image(), drag = null;
const cv = document.getElementById('view'), ctx = cv.getContext('2d');
function cur() { return items[pos]; }
function scale() { const it = cur(); return it ? cv.width / it.width : 1; }
function say(t) { document.getElementById('status').textContent = t; }
async function load() {
  items = await (await fetch('/api/queue')).json();
  pos = Math.min(pos, Math.max(0, items.length - 1));
  show();
}
function show() {
  document.getElementById('count').textContent = '(' + items.length + ' pending)';
  const it = cur();
  if (!it) { document.getElementById('frame').textContent = 'none';
             ctx.clearRect(0, 0, cv.width, cv.height); return; }
  boxes = it.boxes.map(b => b.slice()); labels = it.labels.slice();
  cv.height = Math.round(cv.width * it.height / it.width);
  document.getElementById('frame').textContent = it.id;
  document.getElementById('conf').textContent = (it.confidence ?? 0).toFixed(3);
  img.onload = draw; img.src = '/api/image/' + it.id + '.png';
  showClass();
}
function showClass() {
  const it = cur(); const names = it ? it.classes : [];
  document.getElementById('cls').textContent = (pick + 1) + ' ' + (names[pick] || '');
}
function draw() {
  const s = scale();
  ctx.imageSmoothingEnabled = false;
  ctx.drawImage(img, 0, 0, cv.width, cv.height);
  ctx.lineWidth = 2; ctx.font = '14px sans-serif';
  boxes.forEach((b, i) => {
    const c = COLORS[labels[i] % COLORS.length], names = cur().classes;
    ctx.strokeStyle = c; ctx.fillStyle = c;
    ctx.strokeRect(b[0] * s, b[1] * s, (b[2] - b[0]) * s, (b[3] - b[1]) * s);
    ctx.fillText(names[labels[i]] || labels[i], b[0] * s + 2, b[1] * s + 14);
  });
}
async function decide(decision) {
  const it = cur(); if (!it) return;
  const body = {id: it.id, decision: decision};
  if (decision === 'corrected') { body.boxes = boxes; body.labels = labels; }
  const r = await fetch('/api/decision', {method: 'POST',
    headers: {'Content-Type': 'application/json'}, body: JSON.stringify(body)});
  const j = await r.json();
  say(r.ok ? it.id + ': ' + decision : 'error: ' + j.error);
  if (r.ok) { items.splice(pos, 1); pos = Math.min(pos, Math.max(0, items.length - 1));
              show(); }
}
function setBox(b) {
  const i = labels.indexOf(pick);
  if (i >= 0) boxes[i] = b; else { boxes.push(b); labels.push(pick); }
  draw();
}
function clampBox(x0, y0, x1, y1) {
  const it = cur(), s = scale();
  const cl = (v, m) => Math.max(0, Math.min(m, v / s));
  return [cl(Math.min(x0, x1), it.width), cl(Math.min(y0, y1), it.height),
          cl(Math.max(x0, x1), it.width), cl(Math.max(y0, y1), it.height)];
}
cv.addEventListener('mousedown', e => { drag = [e.offsetX, e.offsetY]; });
cv.addEventListener('mouseup', e => {
  if (!drag || !cur()) return;
  if (Math.abs(e.offsetX - drag[0]) > 2 && Math.abs(e.offsetY - drag[1]) > 2)
    setBox(clampBox(drag[0], drag[1], e.offsetX, e.offsetY));
  drag = null;
});
document.addEventListener('keydown', e => {
  const k = e.key.toLowerCase();
  if (k === 'a' || k === 'enter') decide('accepted');
  else if (k === 'r') decide('rejected');
  else if (k === 'c') decide('corrected');
  else if (k === 'n') { pos = Math.min(pos + 1, items.length - 1); show(); }
  else if (k === 'p') { pos = Math.max(pos - 1, 0); show(); }
  else if (k >= '1' && k <= '9') { pick = Number(k) - 1; showClass(); }
  else if (k === 'delete' || k === 'backspace') {
    const i = labels.indexOf(pick);
    if (i >= 0) { boxes.splice(i, 1); labels.splice(i, 1); draw(); }
  }
});
load();
</script></body></html>
"""
