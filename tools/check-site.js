// check-site.js -- opens every page of the woven site in Chromium and checks
// what a reader would notice: the page loads, its math is MathML that takes
// up space on the screen, every image loads, every internal link reaches an
// existing file and anchor, and the language link reaches the same page in
// the other edition. It also checks the layout: at a phone's width (390 px)
// no page is wider than the screen (wide tables, code, reports, math and
// figures scroll inside their own boxes) and every figure's smallest text
// is 8 px high or more, and on a desktop a code line of the book's
// length (88 characters) fits a chunk's code block and a report without
// scrolling. On the identifier index, the letter jumps reach a heading per
// letter, every entry has an anchor of its own and sits under its letter,
// and the public interface comes before the library's internal names.
// What reading a literate program needs: every chunk reference in a chunk's
// code is a link that reaches a chunk; every chapter page has its contents,
// whose links reach its headings and list every section, and every page
// links to the identifier index and has one search box (the search page
// its own, every other page the top bar's); the search page of
// each edition loads its index and finds known words (and an identifier's
// index entry), with results that reach existing pages and anchors. Math:
// every accent (\hat, \tilde, \bar) is a spacing character, not a combining
// one, and is drawn: its box has a size, lies over its base and makes the
// formula taller than the base alone.
// It opens the pages listed in window.CHECK (all of window.PAGES if there
// is no such list): tools/check-site.sh leaves out the pages that passed
// and whose dependencies have not changed since.
// Results go into <pre id="result">, one line each, and the line DONE at the
// end; tools/check-site.sh reads them.
'use strict';

const out = [];
let failures = 0, nlinks = 0, nimages = 0, nmath = 0, nnarrow = 0, nentries = 0;
let nchunkrefs = 0, ntoc = 0, naccents = 0, nsearch = 0, nfigures = 0;
const PHONE_WIDTH = 390;      // CSS pixels: a phone held upright
const LINE_LENGTH = 88;       // characters: the book's longest code line
const MIN_FIGURE_TEXT = 8;    // CSS pixels: the smallest figure text on a phone
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
    // a formula the text alternative lost leaves a gap ("falls as  from ,")
    else if (/\s\s|\s[,.;:)]|⤢/.test(img.getAttribute('alt')))
      fail(page, 'the text alternative of ' + img.getAttribute('src') + ' has lost words: ' +
                 img.getAttribute('alt').slice(0, 80));
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
  if (isChapter) checkChunkRefs(page, doc);
  if (isChapter) checkContents(page, doc);
  checkAccents(page, doc);
  if (/^(en|ru)\//.test(page)) {
    const idx = doc.querySelector('nav.top a.index-link');
    if (!idx || new URL(idx.getAttribute('href'), url).pathname.split('/').pop() !== 'identifiers.html')
      fail(page, 'no link to the identifier index');
    // one search box a page: the top bar's, or on the search page its own
    const boxes = doc.querySelectorAll('input[type="search"]').length;
    if (/\/search\.html$/.test(page)) {
      if (boxes !== 1 || !doc.getElementById('search-q')) fail(page, boxes + ' search boxes, not the page\'s one');
    } else if (!doc.querySelector('nav.top form.search input[name="q"]') || boxes !== 1)
      fail(page, 'no search form, or ' + boxes + ' search boxes');
  }
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

// Every chunk reference in the code of a chunk is a link to a chunk (the
// link check above proves the anchor exists; this one that it is a chunk's,
// and that no reference is left as text).
function checkChunkRefs(page, doc) {
  for (const code of doc.querySelectorAll('div.chunk pre code')) {
    for (const a of code.querySelectorAll('a.chunk-ref')) {
      nchunkrefs++;
      const href = a.getAttribute('href') || '';
      if (!/^([0-9][0-9]-[a-z0-9-]+\.html)?#NW/.test(href)) fail(page, 'a chunk reference links to ' + href);
      else if (href.startsWith('#')) {
        const t = doc.getElementById(decodeURIComponent(href.slice(1)));
        if (!t || !t.classList.contains('chunk')) fail(page, 'a chunk reference reaches no chunk: ' + href);
      }
    }
    const rest = code.cloneNode(true);
    for (const a of rest.querySelectorAll('a.chunk-ref')) a.remove();
    const left = rest.textContent.match(/⟨[^⟩\n]* [0-9]+[a-z]+⟩/);
    if (left) fail(page, 'a chunk reference that is not a link: ' + left[0]);
  }
}

// A chapter page's contents: links to its headings, one per numbered
// section, and none to a place that is not a heading's.
function checkContents(page, doc) {
  const links = doc.querySelectorAll('nav.page-toc a[href^="#"]');
  if (links.length === 0) { fail(page, 'a chapter page without its contents'); return; }
  const listed = new Set();
  for (const a of links) {
    ntoc++;
    const id = decodeURIComponent(a.getAttribute('href').slice(1));
    const t = doc.getElementById(id);
    const h = t && (/^H[1-6]$/.test(t.tagName) ? t : t.querySelector(':scope > h2, :scope > h3'));
    if (!h) fail(page, 'the contents link to ' + id + ', which is no heading');
    listed.add(id);
  }
  for (const h of doc.querySelectorAll('main h2')) {
    const id = h.id || (h.parentElement.tagName === 'SECTION' ? h.parentElement.id : '');
    if (id && !listed.has(id)) fail(page, 'the contents do not list the section ' + id);
  }
}

// An accent is drawn over its base: a spacing character (Chromium draws a
// combining one at no width, and may lose it), with a box of its own above
// the base, and the formula is taller with it than the base alone.
function checkAccents(page, doc) {
  for (const mv of doc.querySelectorAll('mover')) {
    const acc = mv.lastElementChild, base = mv.firstElementChild;
    if (!acc || !base || acc.tagName.toLowerCase() !== 'mo' || mv.children.length !== 2) continue;
    const isAccent = mv.getAttribute('accent') === 'true' || acc.getAttribute('accent') === 'true';
    if (!isAccent) continue;
    naccents++;
    const tex = (mv.closest('math').querySelector('annotation') || {}).textContent || '';
    const what = ' (' + tex.slice(0, 40) + ')';
    if (/[\u0300-\u036f\u20d0-\u20ff]/.test(acc.textContent)) { fail(page, 'a combining accent' + what); continue; }
    if (mv.getAttribute('accent') !== 'true') { fail(page, 'an accent set as a limit, not an accent' + what); continue; }
    const a = acc.getBoundingClientRect(), b = base.getBoundingClientRect(), m = mv.getBoundingClientRect();
    if (b.width === 0 && b.height === 0) continue;     // not laid out (a folded answer)
    if (a.width <= 0 || a.height <= 0) fail(page, 'an accent that is not drawn' + what);
    else if (a.bottom > b.top + 0.5 * b.height || a.right < b.left || a.left > b.right)
      fail(page, 'an accent not over its base' + what);
    else if (m.height <= b.height + 0.5) fail(page, 'an accent that adds no height to its base' + what);
  }
}

// The search page of an edition finds a known word, with results that reach
// existing pages and anchors, and an identifier's entry in the index.
async function checkSearch(page) {
  const lang = page.split('/')[0];
  const queries = [['softmax', null], ['llm_tensor_check', 'identifiers.html#id-llm_tensor_check'],
                   [lang === 'ru' ? 'градиент' : 'gradient', null]];
  for (const [q, want] of queries) {
    const url = new URL(page + '?q=' + encodeURIComponent(q), location.href).href;
    const frame = await openFrame(url, PHONE_WIDTH);      // results read on a phone
    const doc = frame.contentDocument, win = frame.contentWindow;
    if (!win.SEARCH_INDEX || win.SEARCH_INDEX.length === 0) { fail(page, 'the search index did not load'); frame.remove(); return; }
    const hits = [...doc.querySelectorAll('#search-results li > a[href]')];
    nsearch++;
    if (hits.length === 0) fail(page, 'the search finds nothing for ' + q);
    const root = doc.documentElement;
    if (root.scrollWidth > root.clientWidth)
      fail(page, 'at ' + PHONE_WIDTH + ' px the results for ' + q + ' make the page ' + root.scrollWidth + ' px wide');
    // a snippet shows text, not TeX: no backslash of a formula's markup
    for (const sn of doc.querySelectorAll('#search-results .snippet'))
      if (/\\[a-zA-Z,;:!]/.test(sn.textContent)) {
        fail(page, 'a snippet for ' + q + ' shows TeX: ' + sn.textContent.slice(0, 80));
        break;
      }
    if (want && !hits.slice(0, 3).some((a) => a.getAttribute('href') === want))
      fail(page, 'the search for ' + q + ' does not give ' + want + ' first');
    for (const a of hits.slice(0, 20)) {
      const target = new URL(a.getAttribute('href'), url);
      const tdoc = await parsed(target.href.split('#')[0]);
      if (!tdoc) fail(page, 'a search result reaches no page: ' + a.getAttribute('href'));
      else if (target.hash && !tdoc.getElementById(decodeURIComponent(target.hash.slice(1))))
        fail(page, 'a search result reaches no anchor: ' + a.getAttribute('href'));
      else if (tdoc.documentElement.lang !== lang) fail(page, 'a search result in another edition: ' + a.getAttribute('href'));
    }
    frame.remove();
  }
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

// The smallest text of an SVG figure, in the figure's own units, and the
// width of its view box in those units (dvisvgm writes one CSS rule a font
// size); null for an image that is no such SVG.
async function figureText(src) {
  const text = await readFile(src);
  if (text === null) return null;
  const box = /<svg[^>]* viewBox='[-0-9.]+ [-0-9.]+ ([0-9.]+) /.exec(text);
  const sizes = [...text.matchAll(/font-size:([0-9.]+)px/g)].map((m) => parseFloat(m[1]));
  if (!box || sizes.length === 0) return null;
  return { smallest: Math.min(...sizes), width: parseFloat(box[1]) };
}

// At a phone's width the page is no wider than the screen, and a figure's
// smallest text is drawn at MIN_FIGURE_TEXT pixels or more.
async function checkNarrow(page) {
  const url = new URL(page, location.href).href;
  const frame = await openFrame(url, PHONE_WIDTH);
  const doc = frame.contentDocument;
  if (doc && doc.body) {
    for (const img of doc.images) await imageLoaded(img);
    nnarrow++;
    for (const img of doc.querySelectorAll('figure img')) {
      if (!/\.svg$/.test(img.getAttribute('src'))) continue;
      const t = await figureText(img.src);
      if (t === null) { fail(page, 'figure without sized text: ' + img.getAttribute('src')); continue; }
      const px = t.smallest * img.getBoundingClientRect().width / t.width;
      nfigures++;
      if (!(px >= MIN_FIGURE_TEXT))
        fail(page, 'at ' + PHONE_WIDTH + ' px the smallest text of ' + img.getAttribute('src') +
                   ' is ' + px.toFixed(1) + ' px high (at least ' + MIN_FIGURE_TEXT + ')');
    }
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
  const check = window.CHECK || window.PAGES;
  for (const page of check) {
    try { await checkPage(page); } catch (e) { fail(page, 'exception ' + e); }
    try { await checkNarrow(page); } catch (e) { fail(page, 'exception at ' + PHONE_WIDTH + ' px: ' + e); }
    if (/^(en|ru)\/search\.html$/.test(page))
      try { await checkSearch(page); } catch (e) { fail(page, 'exception in the search: ' + e); }
  }
  for (const l of ['en', 'ru'])
    if (!window.PAGES.includes(l + '/search.html')) fail('site', 'no search page in ' + l);
  // every chapter page of both editions was seen at a phone's width
  const chapters = window.PAGES.filter((p) => /^(en|ru)\/\d\d-/.test(p));
  if (chapters.filter((p) => p.startsWith('en/')).length === 0 ||
      chapters.filter((p) => p.startsWith('ru/')).length === 0)
    fail('site', 'no chapter pages of one edition');
  out.push('pages=' + check.length + (check.length < window.PAGES.length ? ' (of ' + window.PAGES.length + ')' : '') + ' links=' + nlinks + ' images=' + nimages +
           ' math=' + nmath + ' narrow=' + nnarrow + ' phone-figures=' + nfigures + ' index-entries=' + nentries +
           ' chunk-refs=' + nchunkrefs + ' contents-links=' + ntoc + ' accents=' + naccents +
           ' searches=' + nsearch + ' failures=' + failures);
  out.push('DONE');
  document.getElementById('result').textContent = out.join('\n');
})();
