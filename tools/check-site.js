// check-site.js -- opens every page of the woven site in Chromium and checks
// what a reader would notice: the page loads, its math is MathML that takes
// up space on the screen, every image loads, every internal link reaches an
// existing file and anchor, and the language link reaches the same page in
// the other edition. Results go into <pre id="result">, one line each, and
// the line DONE at the end; tools/check-site.sh reads them.
'use strict';

const out = [];
let failures = 0, nlinks = 0, nimages = 0, nmath = 0;
const docs = new Map();

function fail(page, msg) { failures++; out.push('FAIL ' + page + ': ' + msg); }

function readFile(url) {
  return new Promise((resolve) => {
    const xhr = new XMLHttpRequest();
    xhr.open('GET', url);
    xhr.onload = () => resolve(xhr.responseText && xhr.responseText.length > 0 ? xhr.responseText : null);
    xhr.onerror = () => resolve(null);
    xhr.send();
  });
}

async function parsed(url) {
  if (!docs.has(url)) {
    const text = await readFile(url);
    docs.set(url, text === null ? null : new DOMParser().parseFromString(text, 'text/html'));
  }
  return docs.get(url);
}

function openFrame(url) {
  return new Promise((resolve) => {
    const frame = document.createElement('iframe');
    frame.style.width = '1000px';
    frame.style.height = '800px';
    frame.onload = () => resolve(frame);
    frame.src = url;
    document.body.appendChild(frame);
  });
}

function imageLoaded(img) {
  if (img.complete) return Promise.resolve(img.naturalWidth > 0);
  return new Promise((resolve) => {
    img.addEventListener('load', () => resolve(img.naturalWidth > 0));
    img.addEventListener('error', () => resolve(false));
  });
}

async function checkPage(page) {
  const url = new URL(page, location.href).href;
  const frame = await openFrame(url);
  const doc = frame.contentDocument;
  if (!doc || !doc.body || doc.body.children.length === 0) { fail(page, 'does not load'); return; }
  if (!doc.title) fail(page, 'has no title');
  const kind = (doc.querySelector('meta[name="page"]') || {}).content || '';
  const isChapter = /^\d\d-/.test(kind);

  for (const img of doc.images) {
    nimages++;
    if (!(await imageLoaded(img))) fail(page, 'image does not load: ' + img.getAttribute('src'));
    if (!img.getAttribute('alt')) fail(page, 'image without a text alternative: ' + img.getAttribute('src'));
  }

  const maths = doc.querySelectorAll('math');
  nmath += maths.length;
  if (isChapter && maths.length === 0) fail(page, 'a chapter page with no MathML');
  for (const m of maths) {
    const r = m.getBoundingClientRect();
    if (r.width <= 0 || r.height <= 0) { fail(page, 'MathML not rendered: ' + m.textContent.slice(0, 40)); break; }
  }
  for (const el of doc.querySelectorAll('.math')) {
    if (!el.querySelector('math')) { fail(page, 'math left as TeX: ' + el.textContent.slice(0, 40)); break; }
  }
  const prose = doc.body.cloneNode(true);
  for (const c of prose.querySelectorAll('code, pre')) c.remove();
  if (/\[[A-Za-z0-9_\/-]+\]\{\.tv\}|\\tv\{/.test(prose.textContent)) fail(page, 'an unresolved trace placeholder');

  for (const a of doc.querySelectorAll('a[href]')) {
    const href = a.getAttribute('href');
    if (/^(https?:|mailto:)/.test(href)) continue;
    nlinks++;
    const target = new URL(href, url);
    const file = target.href.split('#')[0];
    if (/\.html$/.test(file)) {
      const tdoc = file === url ? doc : await parsed(file);
      if (!tdoc) { fail(page, 'dead link ' + href); continue; }
      if (target.hash && !tdoc.getElementById(decodeURIComponent(target.hash.slice(1))))
        fail(page, 'dead anchor ' + href);
    } else if ((await readFile(file)) === null) {
      fail(page, 'dead link ' + href);
    }
  }

  const sw = doc.querySelector('a.lang-switch');
  if (doc.documentElement.lang && sw === null && page !== 'index.html') fail(page, 'no language link');
  if (sw) {
    const twin = await parsed(new URL(sw.getAttribute('href'), url).href);
    if (!twin) fail(page, 'language link is dead');
    else {
      if (twin.documentElement.lang !== sw.getAttribute('hreflang'))
        fail(page, 'language link reaches a page in ' + twin.documentElement.lang);
      const tkind = (twin.querySelector('meta[name="page"]') || {}).content || '';
      if (tkind !== kind) fail(page, 'language link reaches ' + tkind + ', not ' + kind);
    }
  }
  frame.remove();
}

(async () => {
  for (const page of window.PAGES) {
    try { await checkPage(page); } catch (e) { fail(page, 'exception ' + e); }
  }
  out.push('pages=' + window.PAGES.length + ' links=' + nlinks + ' images=' + nimages +
           ' math=' + nmath + ' failures=' + failures);
  out.push('DONE');
  document.getElementById('result').textContent = out.join('\n');
})();
