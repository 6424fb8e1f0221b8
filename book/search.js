// search.js -- the search page of one edition (book/search.md). It reads
// the edition's index, window.SEARCH_INDEX (search-index.js, made from the
// pages by tools/web.lua and the Makefile): records [page, anchor, page
// title, section title, text], one per section and one per entry of the
// identifier index. A record matches when every word of the query begins a
// word of its title or text (a word of an identifier is any part between
// underscores too). Works from file://, with no network: the index is a
// script, not a file to fetch.
'use strict';
(function () {
  var ru = document.documentElement.lang === 'ru';
  var T = ru ? { button: 'Найти', none: 'Ничего не найдено.', found: 'Найдено: ', shown: ', показаны первые ',
                 noindex: 'Указатель поиска не загрузился (search-index.js).', placeholder: 'слово, имя, фраза' }
             : { button: 'Search', none: 'Nothing found.', found: 'Found: ', shown: ', the first ',
                 noindex: 'The search index did not load (search-index.js).', placeholder: 'a word, a name, a phrase' };
  var MAX = 100;
  var input = document.getElementById('search-q');
  var status = document.getElementById('search-status');
  var list = document.getElementById('search-results');
  document.getElementById('search-go').textContent = T.button;
  input.placeholder = T.placeholder;

  function norm(s) { return s.toLowerCase().replace(/ё/g, 'е'); }
  function esc(s) { return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'); }
  function reEsc(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'); }

  var index = window.SEARCH_INDEX;
  var hay = null;   // normalised title and text of each record, made once

  // a word of the query begins a word: after a letter-or-digit boundary or
  // an underscore (llm_softmax matches "softmax")
  function wordRe(w) { return new RegExp('(^|[^0-9a-zа-я]|_)' + reEsc(w), 'g'); }

  function search(q) {
    var words = norm(q).split(/\s+/).filter(function (w) { return w !== ''; });
    if (words.length === 0) return null;
    if (!hay) hay = index.map(function (r) { return [norm(r[3]), norm(r[4])]; });
    var res = [];
    var res_ = words.map(wordRe);
    for (var i = 0; i < index.length; i++) {
      var score = 0, ok = true;
      for (var k = 0; k < words.length && ok; k++) {
        var re = res_[k];
        re.lastIndex = 0;
        var inTitle = re.test(hay[i][0]);
        re.lastIndex = 0;
        var m = hay[i][1].match(re);
        if (!inTitle && !m) { ok = false; break; }
        score += (inTitle ? 20 : 0) + (hay[i][0] === words[k] ? 50 : 0) + Math.min(m ? m.length : 0, 10);
      }
      if (ok) res.push([score, i]);
    }
    res.sort(function (a, b) { return b[0] - a[0] || a[1] - b[1]; });
    return { words: words, hits: res };
  }

  function snippet(text, words) {
    var t = norm(text), at = -1;
    for (var k = 0; k < words.length && at < 0; k++) {
      var m = wordRe(words[k]).exec(t);
      if (m) at = m.index + m[1].length;
    }
    var from = Math.max(0, at - 70), to = Math.min(text.length, Math.max(at, 0) + 150);
    // whole words only: move the cuts out to the nearest spaces
    while (from > 0 && !/\s/.test(text.charAt(from - 1))) from--;
    while (to < text.length && !/\s/.test(text.charAt(to))) to++;
    var s = (from > 0 ? '… ' : '') + text.slice(from, to) + (to < text.length ? ' …' : '');
    var out = esc(s);
    var re = new RegExp('(' + words.map(function (w) { return reEsc(esc(w)); }).join('|') + ')', 'gi');
    return out.replace(re, '<mark>$1</mark>');
  }

  function show(q) {
    list.innerHTML = '';
    if (!index) { status.textContent = T.noindex; return; }
    var r = search(q);
    if (!r) { status.textContent = ''; return; }
    if (r.hits.length === 0) { status.textContent = T.none; return; }
    status.textContent = T.found + r.hits.length + (r.hits.length > MAX ? T.shown + MAX : '') + '.';
    var html = [];
    for (var j = 0; j < r.hits.length && j < MAX; j++) {
      var rec = index[r.hits[j][1]];
      html.push('<li><a href="' + esc(rec[0]) + '#' + esc(rec[1]) + '">' + esc(rec[3]) + '</a>' +
                (rec[2] && rec[2] !== rec[3] ? ' <span class="where">' + esc(rec[2]) + '</span>' : '') +
                '<div class="snippet">' + snippet(rec[4], r.words) + '</div></li>');
    }
    list.innerHTML = html.join('');
  }

  var q = new URLSearchParams(location.search).get('q') || '';
  input.value = q;
  show(q);
  var timer = null;
  input.addEventListener('input', function () {
    clearTimeout(timer);
    timer = setTimeout(function () { show(input.value); }, 150);
  });
  document.querySelector('form.search-page').addEventListener('submit', function (e) {
    e.preventDefault();
    show(input.value);
    try { history.replaceState(null, '', '?q=' + encodeURIComponent(input.value)); } catch (err) { /* file: */ }
  });
})();
