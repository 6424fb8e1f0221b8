// check-site.js -- opens every page of the woven site in Chromium and checks
// what a reader would notice: the page loads, its math is MathML that takes
// up space on the screen, every image loads, every internal link reaches an
// existing file and anchor, and the language link reaches the same page in
// the other edition. It also checks the layout: at a phone's width (390 px)
// no page is wider than the screen (wide tables, code, reports and math
// scroll inside their own boxes), and on a desktop a code line of the book's
// length (88 characters) fits a chunk's code block and a report without
// scrolling. On the identifier index, the letter jumps reach a heading per
// letter, every entry has an anchor of its own and sits under its letter,
// and the public interface comes before the library's internal names.
// Results go into <pre id="result">, one line each, and the line DONE at the
// end; tools/check-site.sh reads them.
'use strict';

const out = [];
let failures = 0, nlinks = 0, nimages = 0, nmath = 0, nnarrow = 0, nentries = 0;
const PHONE_WIDTH = 390;      // CSS pixels: a phone held upright
const LINE_LENGTH = 88;       // characters: the book's longest code line
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

function openFrame(url, width) {
  return new Promise((resolve) => {
    const frame = document.createElement('iframe');
    frame.style.width = (width || 1000) + 'px';
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

  if (isChapter) checkLineLength(page, doc);
  if (kind === 'identifiers') checkIndex(page, doc);

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

// A line of LINE_LENGTH characters, set as a chunk's code and as a report
// are, fits without scrolling.
function checkLineLength(page, doc) {
  const main = doc.querySelector('main');
  const line = '0'.repeat(LINE_LENGTH);
  const probe = doc.createElement('div');
  probe.innerHTML = '<div class="chunk"><div class="sourceCode"><pre class="sourceCode c"><code class="sourceCode c">' +
    line + '</code></pre></div></div><pre class="report"><code>' + line + '</code></pre>';
  main.appendChild(probe);
  for (const box of probe.querySelectorAll('div.sourceCode, pre')) {
    if (box.scrollWidth > box.clientWidth) {
      fail(page, 'a ' + LINE_LENGTH + '-character line does not fit a ' + box.tagName.toLowerCase() + '.' +
           box.className.replace(/ /g, '.') + ' (' + box.scrollWidth + ' px in ' + box.clientWidth + ')');
      break;
    }
  }
  probe.remove();
}

// The letter an entry of the index is under: its name without the prefix
// llm_ / LLM_ (tools/nwpandoc.awk, sort_key).
function indexLetter(name) {
  const c = name.replace(/^(llm|LLM)_/, '').charAt(0).toUpperCase();
  return /[A-Z]/.test(c) ? c : '_';
}

function checkIndex(page, doc) {
  const jumps = doc.querySelectorAll('#index-letters .jump a[href^="#"]');
  const headings = doc.querySelectorAll('h3.letter[id]');
  if (jumps.length === 0) fail(page, 'the index has no letter jumps');
  if (headings.length === 0) fail(page, 'the index has no letter headings');
  const targets = new Set([...jumps].map((a) => a.getAttribute('href').slice(1)));
  for (const h of headings)
    if (!targets.has(h.id)) fail(page, 'no letter jump reaches the heading ' + h.id);
  const api = doc.getElementById('api'), internal = doc.getElementById('internal');
  if (!api || !internal) fail(page, 'the index has no public interface or no internal part');
  else if (!(api.compareDocumentPosition(internal) & Node.DOCUMENT_POSITION_FOLLOWING))
    fail(page, 'the internal names come before the public interface');
  const seen = new Set();
  for (const h of headings) {
    const letter = h.id.replace(/^(api|internal)-/, '').toUpperCase().replace('OTHER', '_');
    const list = h.nextElementSibling;
    if (!list || list.tagName !== 'UL') { fail(page, 'the letter ' + h.id + ' has no list'); continue; }
    for (const li of list.children) {
      nentries++;
      const a = li.firstElementChild;
      const name = a ? a.textContent : '';
      if (!a || a.tagName !== 'A' || a.id !== 'id-' + name || a.getAttribute('href') !== '#' + a.id) {
        fail(page, 'an index entry without its own anchor: ' + li.textContent.slice(0, 40));
        continue;
      }
      if (seen.has(a.id)) fail(page, 'two index entries for ' + name);
      seen.add(a.id);
      if (indexLetter(name) !== letter) fail(page, name + ' is under the letter ' + h.id);
      const inInternal = !!internal && !!(internal.compareDocumentPosition(a) & Node.DOCUMENT_POSITION_FOLLOWING);
      if (h.id.startsWith('internal-') !== inInternal) fail(page, name + ' is in the wrong part of the index');
    }
  }
}

// At a phone's width the page is no wider than the screen.
async function checkNarrow(page) {
  const url = new URL(page, location.href).href;
  const frame = await openFrame(url, PHONE_WIDTH);
  const doc = frame.contentDocument;
  if (doc && doc.body) {
    for (const img of doc.images) await imageLoaded(img);
    nnarrow++;
    const root = doc.documentElement;
    if (root.scrollWidth > root.clientWidth) {
      // name the first element that reaches past the screen and is not
      // inside a box that scrolls
      const win = frame.contentWindow;
      const scrolled = (el) => {
        for (let e = el.parentElement; e && e !== doc.body; e = e.parentElement)
          if (win.getComputedStyle(e).overflowX !== 'visible') return true;
        return false;
      };
      let culprit = '';
      for (const el of doc.body.querySelectorAll('*')) {
        if (el.getBoundingClientRect().right > root.clientWidth + 0.5 && !scrolled(el)) {
          culprit = ' (first past the edge: a ' + el.tagName.toLowerCase() + ' element, ' +
                    el.textContent.replace(/\s+/g, ' ').slice(0, 40) + ')';
          break;
        }
      }
      fail(page, 'at ' + PHONE_WIDTH + ' px the page is ' + root.scrollWidth + ' px wide' + culprit);
    }
  }
  frame.remove();
}

(async () => {
  for (const page of window.PAGES) {
    try { await checkPage(page); } catch (e) { fail(page, 'exception ' + e); }
    try { await checkNarrow(page); } catch (e) { fail(page, 'exception at ' + PHONE_WIDTH + ' px: ' + e); }
  }
  // every chapter page of both editions was seen at a phone's width
  const chapters = window.PAGES.filter((p) => /^(en|ru)\/\d\d-/.test(p));
  if (chapters.filter((p) => p.startsWith('en/')).length === 0 ||
      chapters.filter((p) => p.startsWith('ru/')).length === 0)
    fail('site', 'no chapter pages of one edition');
  out.push('pages=' + window.PAGES.length + ' links=' + nlinks + ' images=' + nimages +
           ' math=' + nmath + ' narrow=' + nnarrow + ' index-entries=' + nentries + ' failures=' + failures);
  out.push('DONE');
  document.getElementById('result').textContent = out.join('\n');
})();
