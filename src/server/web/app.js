// The page of `steadyocr serve` (docs/SERVING.md, "The page"): sends a picked, dropped or pasted image to
// POST /v1/ocr as the raw body (its own Content-Type; the options in the query string), draws the image with every
// line's box stroked over it in pure rgb(0, 255, 0), and lists the text, the rung, the timings and the request id,
// or the error's code, message and fix.
//
// /?sample=NAME reads /web/NAME (the server embeds sample.jpg) on load; option names in the query (cls, det_only,
// drop_score, det_box_thresh, unclip_ratio) preset the options. <body data-state> is idle, busy, done or error, so a
// headless browser can tell when the result is drawn (tests/server/test_server_web.cpp).
'use strict';

(() => {
  // Documented (docs/SERVING.md) and counted by the test in the screenshot: keep it a colour no document has.
  const BOX_COLOUR = 'rgb(0, 255, 0)';
  const BOX_WIDTH = 3;  // CSS pixels
  const LIST_MIN_WIDTH = 420;  // #side's flex-basis in style.css: the list keeps at least this beside the image
  const HIGHLIGHT = 'rgba(255, 0, 255, 0.3)';
  const STAGES = ['queue', 'decode', 'det', 'post', 'cls', 'rec', 'total'];
  const OPTIONS = ['cls', 'det_only', 'drop_score', 'det_box_thresh', 'unclip_ratio'];

  const $ = (id) => document.getElementById(id);
  const page = { file: null, bitmap: null, result: null, highlight: -1 };

  function setState(state) {
    document.body.dataset.state = state;
  }

  function setStatus(text) {
    $('status').textContent = text;
  }

  function element(tag, className, text) {
    const e = document.createElement(tag);
    if (className) e.className = className;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  // --- options: the query string of POST /v1/ocr (the raw-body shape takes them there)

  function optionInput(name) {
    return $('opt-' + name);
  }

  function optionsQuery() {
    const q = new URLSearchParams();
    for (const name of OPTIONS) {
      const input = optionInput(name);
      if (input.type === 'checkbox') {
        if (input.checked) q.set(name, 'true');
      } else if (input.value !== '') {
        q.set(name, input.value);
      }
    }
    const s = q.toString();
    return s ? '?' + s : '';
  }

  function presetOptions(params) {
    for (const name of OPTIONS) {
      if (!params.has(name)) continue;
      const input = optionInput(name);
      const v = params.get(name);
      if (input.type === 'checkbox') input.checked = v === 'true' || v === '1';
      else input.value = v;
    }
  }

  // --- errors

  function showError(status, error, requestId) {
    page.result = null;
    $('result').hidden = true;
    $('error-code').textContent = error.code || 'ERROR';
    $('error-status').textContent = status ? 'HTTP ' + status : '';
    $('error-message').textContent = error.message || '';
    $('error-fix').textContent = error.fix || '(none given)';
    $('error-request-id').textContent = requestId || '-';
    $('error').hidden = false;
    document.body.dataset.errorCode = error.code || 'ERROR';
    setStatus('The request failed: ' + (error.code || 'ERROR') + '.');
    setState('error');
  }

  function clearError() {
    $('error').hidden = true;
    delete document.body.dataset.errorCode;
  }

  // The error of a response that is not 2xx: the server's {"error": {"code", "message", "fix"}}, or what came back.
  function errorOf(status, text) {
    try {
      const body = JSON.parse(text);
      if (body && typeof body.error === 'object' && body.error) return body.error;
    } catch (e) {
      // not JSON: a proxy's page, say
    }
    return { code: 'HTTP_' + status, message: text.slice(0, 500), fix: '' };
  }

  // --- OCR

  async function run(file) {
    page.file = file;
    page.result = null;
    page.highlight = -1;
    $('rerun').disabled = false;
    clearError();
    setState('busy');
    setStatus('Reading ' + (file.name || 'the image') + ' (' + file.size + ' bytes)…');
    // The browser's own decode, for drawing only (the server decodes for OCR); null for formats it cannot show.
    const bitmapPromise = createImageBitmap(file).catch(() => null);
    const started = performance.now();
    let response;
    let text;
    try {
      response = await fetch('/v1/ocr' + optionsQuery(), {
        method: 'POST',
        headers: { 'Content-Type': file.type || 'application/octet-stream' },
        body: file,
      });
      text = await response.text();
    } catch (e) {
      showError(0, { code: 'NETWORK_ERROR', message: String(e), fix: 'is the server still running?' }, '');
      return;
    }
    const roundTrip = performance.now() - started;
    const requestId = response.headers.get('X-Request-Id') || '';
    if (!response.ok) {
      showError(response.status, errorOf(response.status, text), requestId);
      return;
    }
    let result;
    try {
      result = JSON.parse(text);
    } catch (e) {
      showError(response.status, { code: 'BAD_RESPONSE', message: 'the answer is not JSON: ' + text.slice(0, 200) },
                requestId);
      return;
    }
    page.bitmap = await bitmapPromise;
    page.result = result;
    render(result, roundTrip);
  }

  // --- the result

  function render(r, roundTrip) {
    $('result').hidden = false;
    $('meta-rung').textContent = r.rung || '-';
    $('meta-backend').textContent = r.backend || '-';
    $('meta-request-id').textContent = r.request_id || '-';
    $('meta-image').textContent = (page.file.name || '(unnamed)') + ', ' + r.width + ' × ' + r.height +
                                  (page.bitmap ? '' : ' (this browser cannot show the format: boxes only)');
    const fallbacks = (r.fallbacks || []).map((f) => f.from + ' → ' + (f.to || '(none)') + ': ' + f.reason);
    $('meta-fallbacks').textContent = fallbacks.length ? fallbacks.join('; ') : 'none';

    const timings = $('timings');
    timings.replaceChildren();
    const t = r.timings_ms || {};
    const total = Math.max(t.total || 0, 1e-9);
    for (const stage of STAGES) {
      if (!(stage in t)) continue;
      const row = element('tr');
      row.append(element('th', '', stage), element('td', 'ms', t[stage].toFixed(1)));
      const bar = element('td', 'bar');
      const fill = element('span');
      fill.style.width = Math.min(100, (100 * t[stage]) / total).toFixed(1) + '%';
      bar.append(fill);
      row.append(bar);
      timings.append(row);
    }
    const rt = element('tr', 'round-trip');
    rt.append(element('th', '', 'round trip'), element('td', 'ms', roundTrip.toFixed(1)), element('td', 'bar'));
    timings.append(rt);

    const lines = $('lines');
    lines.replaceChildren();
    r.lines.forEach((line, i) => {
      const li = element('li');
      li.dataset.index = i;
      li.append(element('span', 'n', String(i + 1)),
                line.text ? element('span', 't', line.text) : element('span', 't none', '(no text: det_only)'),
                element('span', 's', line.score.toFixed(3)));
      li.addEventListener('mouseenter', () => highlight(i));
      li.addEventListener('mouseleave', () => highlight(-1));
      lines.append(li);
    });
    $('lines-title').textContent = 'Lines (' + r.lines.length + ')';

    draw();
    document.body.dataset.lines = String(r.lines.length);
    document.body.dataset.requestId = r.request_id || '';
    setStatus(r.lines.length + ' line' + (r.lines.length === 1 ? '' : 's') + ' in ' + roundTrip.toFixed(0) +
              ' ms (rung ' + r.rung + ').');
    setState('done');
  }

  function highlight(i) {
    page.highlight = i;
    for (const li of $('lines').children) li.classList.toggle('on', Number(li.dataset.index) === i);
    draw();
  }

  // The image fitted into the space left of the list and below the controls, with the boxes over it. Drawn in CSS
  // pixels times devicePixelRatio, so the strokes are BOX_WIDTH pixels wide on the screen whatever the image's size.
  function draw() {
    const r = page.result;
    if (!r) return;
    const canvas = $('canvas');
    const view = $('view');
    const w = r.width;
    const h = r.height;
    const box = getComputedStyle($('result'));
    const inner = $('result').clientWidth - parseFloat(box.paddingLeft) - parseFloat(box.paddingRight);
    const beside = inner - LIST_MIN_WIDTH - (parseFloat(box.columnGap) || 16);
    const maxW = Math.max(160, beside >= 240 ? beside : inner);  // a narrow window: the list goes below
    const maxH = Math.max(240, window.innerHeight - view.getBoundingClientRect().top - 16);
    const scale = Math.min(2, maxW / w, maxH / h);
    const cssW = Math.max(1, Math.round(w * scale));
    const cssH = Math.max(1, Math.round(h * scale));
    const dpr = window.devicePixelRatio || 1;
    canvas.style.width = cssW + 'px';
    canvas.style.height = cssH + 'px';
    canvas.width = Math.round(cssW * dpr);
    canvas.height = Math.round(cssH * dpr);
    const ctx = canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.fillStyle = '#fff';
    ctx.fillRect(0, 0, cssW, cssH);
    if (page.bitmap) ctx.drawImage(page.bitmap, 0, 0, cssW, cssH);
    const sx = cssW / w;
    const sy = cssH / h;
    const quads = r.lines.map((line) => line.box.map(([x, y]) => [x * sx, y * sy]));

    if (page.highlight >= 0 && quads[page.highlight]) {
      ctx.fillStyle = HIGHLIGHT;
      trace(ctx, quads[page.highlight]);
      ctx.fill();
    }
    // Labels first: a label never hides a stroke.
    ctx.font = '12px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    quads.forEach((q, i) => label(ctx, q, String(i + 1), cssW));
    ctx.strokeStyle = BOX_COLOUR;
    ctx.lineWidth = BOX_WIDTH;
    ctx.lineJoin = 'miter';
    for (const q of quads) {
      trace(ctx, q);
      ctx.stroke();
    }
    // Where the image is on the page, for the test that maps boxes onto the screenshot.
    const rect = canvas.getBoundingClientRect();
    canvas.dataset.rect = [rect.left + window.scrollX, rect.top + window.scrollY, cssW, cssH].map(Math.round).join(',');
    canvas.dataset.scale = scale.toFixed(6);
  }

  function trace(ctx, q) {
    ctx.beginPath();
    ctx.moveTo(q[0][0], q[0][1]);
    for (let k = 1; k < q.length; ++k) ctx.lineTo(q[k][0], q[k][1]);
    ctx.closePath();
  }

  // The line's number on a dark tag left of its box (above it, or inside, where there is no room).
  function label(ctx, q, text, width) {
    const xs = q.map((p) => p[0]);
    const ys = q.map((p) => p[1]);
    const left = Math.min(...xs);
    const top = Math.min(...ys);
    const tw = ctx.measureText(text).width + 6;
    const th = 14;
    const gap = BOX_WIDTH + 1;
    let x = left - gap - tw;
    let y = top;
    if (x < 0) {
      x = left;
      y = top - gap - th;
      if (y < 0) {
        x = Math.min(left + gap, width - tw);
        y = top + gap;
      }
    }
    ctx.fillStyle = 'rgba(20, 24, 32, 0.85)';
    ctx.fillRect(x, y, tw, th);
    ctx.fillStyle = '#fff';
    ctx.fillText(text, x + 3, y + th / 2 + 0.5);
  }

  // --- input: picker, drop, paste, the sample of the query

  function takeFiles(files) {
    if (files && files.length) run(files[0]);
  }

  async function loadSample(name) {
    if (!/^[A-Za-z0-9._-]+$/.test(name)) {
      showError(0, { code: 'BAD_SAMPLE', message: 'sample=' + name + ' is not a plain file name', fix: '?sample=sample.jpg' },
                '');
      return;
    }
    setState('busy');
    setStatus('Fetching the sample /web/' + name + '…');
    let response;
    let blob;
    try {
      response = await fetch('/web/' + encodeURIComponent(name));
      if (!response.ok) {
        showError(response.status, errorOf(response.status, await response.text()),
                  response.headers.get('X-Request-Id') || '');
        return;
      }
      blob = await response.blob();
    } catch (e) {
      showError(0, { code: 'NETWORK_ERROR', message: String(e), fix: 'is the server still running?' }, '');
      return;
    }
    const type = (response.headers.get('Content-Type') || '').split(';')[0].trim();
    await run(new File([blob], name, { type }));
  }

  async function showServer() {
    try {
      const response = await fetch('/readyz');
      const r = await response.json();
      $('server').textContent = (r.ready ? 'ready' : 'not ready (' + r.reason + ')') +
                                (r.rung ? ' · rung ' + r.rung + ' (backend ' + r.backend + ')' : '');
    } catch (e) {
      $('server').textContent = 'the server does not answer /readyz';
    }
  }

  function start() {
    const drop = $('drop');
    $('file').addEventListener('change', (e) => takeFiles(e.target.files));
    for (const type of ['dragenter', 'dragover']) {
      drop.addEventListener(type, (e) => {
        e.preventDefault();
        drop.classList.add('over');
      });
    }
    for (const type of ['dragleave', 'drop']) drop.addEventListener(type, () => drop.classList.remove('over'));
    // The drop itself is taken anywhere on the page (the zone's bubbles up here): a file dropped beside the zone must
    // not make the browser leave the page to show it.
    window.addEventListener('dragover', (e) => e.preventDefault());
    window.addEventListener('drop', (e) => {
      e.preventDefault();
      takeFiles(e.dataTransfer.files);
    });
    document.addEventListener('paste', (e) => takeFiles(e.clipboardData && e.clipboardData.files));
    $('rerun').addEventListener('click', () => page.file && run(page.file));
    window.addEventListener('resize', draw);

    const params = new URLSearchParams(location.search);
    presetOptions(params);
    showServer();
    if (params.has('sample')) loadSample(params.get('sample'));
  }

  start();
})();
