-- book.lua: the book's pandoc filter.
--
-- Run on every page and on both PDFs. Metadata it reads:
--   lang      en or ru: the edition being built
--   tracedir  where the chapters' traces are (build/traces)
--   figdir    where the figures of this edition are, as the output will
--             refer to them (figures for HTML, build/figures/LANG for PDF)
--   figext    svg or pdf
--
-- What it does, in this order:
--   1. keeps the Divs and Spans tagged with the edition's language (unwrapped)
--      and drops those tagged with the other one;
--   2. inside each chapter Div (.chapter trace="chNN-slug") replaces
--        [key]{.tv}             with the trace value named key
--        \tv{key} in TeX math   with the same value
--        ::: {.tracetable rows=NAME} with a pipe table inside: the table's
--                               body with the trace rows of table NAME
--        ![alt](chNN-name)      with the figure file of this edition;
--        ::: {.report} :::      with the report the chapter's demo printed;
--      an unknown key, table or figure, or a row of the wrong width, stops
--      the build with a message naming the chapter;
--   3. in HTML, puts every table in a Div.table-wrap (its caption above
--      it, outside the box), display math in a
--      Span.display-math and inline math in a Span.inline-math, boxes that
--      scroll by themselves when they are wider than the screen;
--   4. sets the page title and the navigation metadata of the edition.

package.path = 'tools/?.lua;' .. package.path
local util = require('filter-util')
local has_class, meta_str = util.has_class, util.meta_str

local lang, tracedir, figdir, figext
local traces = {}

local function fail(msg)
  io.stderr:write('book.lua: ' .. msg .. '\n')
  os.exit(1)
end

local function split_tabs(line)
  local fields = {}
  for field in (line .. '\t'):gmatch('([^\t]*)\t') do
    fields[#fields + 1] = field
  end
  return fields
end

-- A trace is a text file of tab-separated lines:
--   v  KEY  VALUE          one value
--   r  TABLE  CELL...      one row of a table
-- Lines starting with # are comments.
local function load_trace(name)
  if traces[name] then return traces[name] end
  local path = tracedir .. '/' .. name .. '.trace'
  local f = io.open(path, 'r')
  if not f then fail('no trace ' .. path .. ' (has the demo run?)') end
  local t = { values = {}, tables = {} }
  local n = 0
  for line in f:lines() do
    n = n + 1
    if line ~= '' and line:sub(1, 1) ~= '#' then
      local fields = split_tabs(line)
      if fields[1] == 'v' and #fields == 3 then
        t.values[fields[2]] = fields[3]
      elseif fields[1] == 'r' and #fields >= 3 then
        local rows = t.tables[fields[2]] or {}
        local cells = {}
        for i = 3, #fields do cells[#cells + 1] = fields[i] end
        rows[#rows + 1] = cells
        t.tables[fields[2]] = rows
      else
        fail(path .. ':' .. n .. ': not a trace line')
      end
    end
  end
  f:close()
  traces[name] = t
  return t
end

-- A key may name another chapter's trace: chNN-slug/key.
local function lookup(chapter, key)
  local name, k = key:match('^(ch%d%d%-[%w%-]+)/(.+)$')
  if not name then name, k = chapter, key end
  local v = load_trace(name).values[k]
  if v == nil then fail(chapter .. ': trace ' .. name .. ' has no value ' .. k) end
  return v
end

-- Demos print a few words (yes, exact, pass, ...) in their reports and
-- traces; the Russian edition quotes them in Russian. Only a value that is
-- exactly one of these words is translated; the words and their Russian
-- are in book/trace-words.txt, which the figures read too.
local RU_WORDS = {}
do
  local f = io.open('book/trace-words.txt', 'r')
  if not f then error('book.lua: no book/trace-words.txt') end
  for line in f:lines() do
    if not line:match('^#') and line:match('%S') then
      local en, ru = line:match('^([^\t]+)\t([^\t]+)$')
      if not en then error('book.lua: book/trace-words.txt: not a pair: ' .. line) end
      RU_WORDS[en] = ru
    end
  end
  f:close()
end

-- A minus sign before a digit is set as U+2212, which neither looks like a
-- hyphen nor lets a line break between the sign and its number.
local function localize(text)
  if lang == 'ru' and RU_WORDS[text] then return RU_WORDS[text] end
  text = text:gsub('^%-(%d)', '\u{2212}%1'):gsub('([%s%[%(,])%-(%d)', '%1\u{2212}%2')
  return text
end

local function cell_blocks(text)
  text = localize(text)
  -- a cell is inline Markdown (numbers, `code`, $math$); anything that would
  -- read as another block ("-" is a list, "#" a heading) is kept as text
  local doc = pandoc.read(text, 'markdown')
  if #doc.blocks ~= 1 or (doc.blocks[1].t ~= 'Para' and doc.blocks[1].t ~= 'Plain') then
    return { pandoc.Plain({ pandoc.Str(text) }) }
  end
  return { pandoc.Plain(doc.blocks[1].content) }
end

-- The noun after a count, in the edition's grammar: noun="one|other" in
-- English, noun="one|few|many" in Russian (1 параметр, 2 параметра,
-- 5 параметров; 21 параметр, 12 параметров). A value that is not a whole
-- number takes the plural in English and the genitive singular (the "few"
-- form) in Russian: 2.5 параметра.
function noun_form(value, forms, chapter)
  local f = {}
  for w in (forms .. '|'):gmatch('([^|]*)|') do f[#f + 1] = w end
  local want = (lang == 'ru') and 3 or 2
  if #f ~= want then
    fail(chapter .. ': noun="' .. forms .. '" needs ' .. want .. ' forms separated by | in the ' ..
         lang .. ' edition')
  end
  local n = tonumber(value)
  if n == nil then fail(chapter .. ': noun="' .. forms .. '" follows a value that is not a number: ' .. value) end
  local whole = (n == math.floor(n)) and math.abs(n) < 2^53
  if lang ~= 'ru' then return (whole and math.abs(n) == 1) and f[1] or f[2] end
  if not whole then return f[2] end
  local m10, m100 = math.abs(n) % 10, math.abs(n) % 100
  if m10 == 1 and m100 ~= 11 then return f[1] end
  if m10 >= 2 and m10 <= 4 and (m100 < 12 or m100 > 14) then return f[2] end
  return f[3]
end

-- The chapters present, by number: CHAPTERS['08'] = '08-tensor-storage'.
local CHAPTERS = nil
local function chapters()
  if CHAPTERS then return CHAPTERS end
  CHAPTERS = {}
  local ls = io.popen('ls chapters')
  for name in ls:lines() do
    local slug = name:match('^(%d%d%-[%w%-]+)%.nw$')
    if slug then CHAPTERS[slug:sub(1, 2)] = slug end
  end
  ls:close()
  return CHAPTERS
end

-- A reference to a chapter is written [chapter 22](ch:22) or, to one of its
-- sections, [chapter 1, "The shape of a demo"](ch:01#demo-shape). It becomes
-- a link to the chapter's page (HTML) or place (print); a chapter that is
-- not written yet is named without a link (tools/chapter-refs.sh lists them).
local function chapter_link(el)
  local n, id = el.target:match('^ch:(%d%d)#?(.*)$')
  if not n then
    if el.target == 'glossary.html' and FORMAT == 'latex' then
      el.target = '#glossary'
      return el
    end
    return nil
  end
  local slug = chapters()[n]
  if not slug then return pandoc.Span(el.content, pandoc.Attr('', { 'chapter-ahead' })) end
  -- in print, one_document turns this into a link inside the book
  el.target = slug .. '.html' .. ((id ~= '') and ('#' .. id) or '')
  return el
end

local math_text, plain_text = util.math_text, util.plain_text

local function chapter_filter(chapter)
  return {
    Span = function(el)
      if has_class(el, 'tv') then
        local v = lookup(chapter, pandoc.utils.stringify(el.content))
        local noun = el.attributes['noun']
        if noun then
          return { pandoc.Str(localize(v)), pandoc.Str('\u{00A0}' .. noun_form(v, noun, chapter)) }
        end
        return pandoc.Str(localize(v))
      end
    end,
    Math = function(el)
      el.text = el.text:gsub('\\tv{([^}]+)}', function(k) return lookup(chapter, k) end)
      return el
    end,
    Div = function(el)
      if has_class(el, 'predictions') then
        -- the answers to the chapter's opening questions, given with the
        -- evidence that settles them
        local title = (lang == 'ru') and 'Проверка предсказаний' or 'The predictions, checked'
        table.insert(el.content, 1, pandoc.Header(3, { pandoc.Str(title) },
                                                  pandoc.Attr('predictions', { 'unnumbered' })))
        return el
      end
      if has_class(el, 'report') then
        -- the demo's frozen report, as the reader would see it printed
        local path = REPORTDIR .. '/' .. chapter .. '.txt'
        local f = io.open(path, 'r')
        if not f then fail(chapter .. ': no report ' .. path) end
        local text = f:read('a')
        f:close()
        return pandoc.CodeBlock(text:gsub('\n$', ''), { class = 'report' })
      end
      if not has_class(el, 'tracetable') then return nil end
      local tname = el.attributes['rows']
      if not tname then fail(chapter .. ': a tracetable needs rows=NAME') end
      local rows = load_trace(chapter).tables[tname]
      if not rows then fail(chapter .. ': trace has no table ' .. tname) end
      local found = false
      local content = pandoc.walk_block(pandoc.Div(el.content), {
        Table = function(tbl)
          found = true
          local st = pandoc.utils.to_simple_table(tbl)
          local width = #st.headers
          local body = {}
          for i, cells in ipairs(rows) do
            if #cells ~= width then
              fail(chapter .. ': table ' .. tname .. ' row ' .. i .. ' has ' ..
                   #cells .. ' cells, the header has ' .. width)
            end
            local row = {}
            for j, c in ipairs(cells) do row[j] = cell_blocks(c) end
            body[i] = row
          end
          st.rows = body
          return pandoc.utils.from_simple_table(st)
        end,
      })
      if not found then fail(chapter .. ': tracetable ' .. tname .. ' holds no table') end
      el.content = content.content
      return el
    end,
    Image = function(el)
      if el.src:match('^ch%d%d%-[%w%-]+$') then
        local path = figdir .. '/' .. el.src .. '.' .. figext
        local check = (figext == 'svg') and (FIGCHECK .. '/' .. el.src .. '.svg') or path
        local f = io.open(check, 'r')
        if not f then fail(chapter .. ': no figure ' .. check) end
        local head = f:read(4096) or ''
        f:close()
        el.src = path
        -- on the web, a figure can be opened on its own, at any size; its
        -- own width (CSS pixels) lets a phone show it larger (book/style.css)
        if figext == 'svg' then
          local pt = head:match("<svg[^>]- width='([%d.]+)pt'")
          if not pt then fail(chapter .. ': no width in points in ' .. check) end
          el.attributes.style = string.format('--fig-width: %.0fpx', tonumber(pt) * 4 / 3)
          -- the text alternative is the caption, its formulas as plain text
          el.attributes.alt = plain_text(el.caption)
          local label = (lang == 'ru') and 'открыть рисунок отдельно' or 'open the figure on its own'
          el.caption[#el.caption + 1] = pandoc.Space()
          el.caption[#el.caption + 1] = pandoc.Link({ pandoc.Str('⤢ ' .. label) }, path, '',
                                                    pandoc.Attr('', { 'figure-open' }))
        end
        return el
      end
    end,
  }
end

-- In print every chapter is part of one document, so the section ids that
-- chapters share (predict, notation, ...) are prefixed with the chapter's
-- slug, and links between chapter pages become links inside the document:
--   #id -> #chNN-slug--id,  NN-slug.html#id -> #chNN-slug--id,
--   NN-slug.html -> #chNN-slug (the chapter Div's id)
-- Chunk labels (NW...) are unique already and stay as they are.
function one_document(slug)
  local function local_id(id)
    if id == '' or id:match('^NW') then return id end
    return slug .. '--' .. id
  end
  local function rename(el)
    if el.identifier and el.identifier ~= '' then
      el.identifier = local_id(el.identifier)
      return el
    end
  end
  return {
    Header = rename, Span = rename, Table = rename, CodeBlock = rename,
    Div = function(el)
      if el.identifier ~= slug then return rename(el) end
    end,
    Link = function(el)
      local page, id = el.target:match('^(%d%d%-[%w%-]+)%.html#?(.*)$')
      if page then
        page = 'ch' .. page
        el.target = '#' .. ((id ~= '' and not id:match('^NW')) and (page .. '--' .. id) or (id ~= '' and id or page))
      elseif el.target:match('^#') then
        el.target = '#' .. local_id(el.target:sub(2))
      end
      return el
    end,
  }
end

function Pandoc(doc)
  local meta = doc.meta
  lang = meta_str(meta, 'lang') or 'en'
  tracedir = meta_str(meta, 'tracedir') or 'build/traces'
  figdir = meta_str(meta, 'figdir') or 'figures'
  figext = meta_str(meta, 'figext') or 'svg'
  FIGCHECK = meta_str(meta, 'figcheck') or figdir
  REPORTDIR = meta_str(meta, 'reportdir') or 'build/reports'

  -- 1. the edition's language
  local body = pandoc.walk_block(pandoc.Div(doc.blocks), {
    Div = function(el)
      local l = el.attributes['lang']
      if l == nil then return nil end
      if l == lang then return el.content end
      return {}
    end,
    Span = function(el)
      local l = el.attributes['lang']
      if l == nil then return nil end
      if l == lang then return el.content end
      return {}
    end,
  })

  -- text quoted in a language of its own (the corpus page's documents,
  -- text-lang=xx) is marked as that language: a screen reader reads it so,
  -- and the PDF hyphenates it by that language's rules; a count that is no
  -- trace value, [27]{.count noun="..."} (the corpus page's), takes its
  -- noun in the edition's grammar as a trace value does
  body = pandoc.walk_block(body, {
    Div = function(el)
      local l = el.attributes['text-lang']
      if l == nil then return nil end
      el.attributes['text-lang'] = nil
      if l ~= lang then el.attributes['lang'] = l end   -- else it is the page's
      return el
    end,
    Span = function(el)
      local noun = el.attributes['noun']
      if not has_class(el, 'count') or noun == nil then return nil end
      local v = pandoc.utils.stringify(el.content)
      return { pandoc.Str(v), pandoc.Str('\u{00A0}' .. noun_form(v, noun, meta_str(meta, 'slug') or 'a page')) }
    end,
  })

  -- references to chapters
  body = pandoc.walk_block(body, { Link = chapter_link })

  -- in print, the cross-references under a chunk are set small
  if FORMAT == 'latex' then
    body = pandoc.walk_block(body, {
      Span = function(el)
        if has_class(el, 'chunk-foot') then
          local out = { pandoc.RawInline('latex', '{\\footnotesize ') }
          for _, il in ipairs(el.content) do out[#out + 1] = il end
          out[#out + 1] = pandoc.RawInline('latex', '}')
          return out
        end
      end,
    })
  end

  -- the book's parts (metadata "parts": first chapter and title per edition)
  local parts = {}
  for _, p in ipairs(meta['parts'] or {}) do
    parts[#parts + 1] = { first = tonumber(pandoc.utils.stringify(p.first)),
                          title = pandoc.utils.stringify(p[lang]) }
  end
  local function part_of(n)
    local found = nil
    for i, p in ipairs(parts) do
      if p.first <= n then found = i end
    end
    return found
  end

  -- the contents page: the flat list of chapters, grouped under part titles
  if pandoc.utils.stringify(meta['slug'] or '') == 'index' then
    local out = {}
    for _, b in ipairs(body.content) do
      if b.t == 'BulletList' then
        local current, items = nil, {}
        local function flush()
          if #items > 0 then out[#out + 1] = pandoc.BulletList(items) end
          items = {}
        end
        for _, item in ipairs(b.content) do
          local n = tonumber(pandoc.utils.stringify(item):match('^(%d+) ·'))
          local p = n and part_of(n)
          if p and p ~= current then
            flush()
            current = p
            out[#out + 1] = pandoc.Header(2, { pandoc.Str(parts[p].title) },
                                          pandoc.Attr('part-' .. parts[p].first, { 'unnumbered' }))
          elseif not p and current then
            flush()
            current = nil
          end
          items[#items + 1] = item
        end
        flush()
      else
        out[#out + 1] = b
      end
    end
    body = pandoc.Div(out)
  end

  -- 2. trace values, tables and figures, chapter by chapter
  local blocks = {}
  local printed_part = nil
  for _, b in ipairs(body.content) do
    if b.t == 'Div' and has_class(b, 'chapter') then
      local p = part_of(tonumber(b.attributes['chapter']) or 0)
      if FORMAT == 'latex' and p and p ~= printed_part then
        blocks[#blocks + 1] = pandoc.RawBlock('latex', '\\setcounter{part}{' .. (p - 1) ..
                                              '}\\part{' .. parts[p].title .. '}')
        printed_part = p
      end
      b = pandoc.walk_block(b, chapter_filter(b.attributes['trace']))
      if FORMAT == 'latex' then b = pandoc.walk_block(b, one_document(b.identifier)) end
    elseif FORMAT == 'latex' then
      -- the front matter's links to chapters
      b = pandoc.walk_block(b, { Link = function(el)
        local page, id = el.target:match('^(%d%d%-[%w%-]+)%.html#?(.*)$')
        if page then
          el.target = '#ch' .. page .. ((id ~= '' and not id:match('^NW')) and ('--' .. id) or '')
          if id:match('^NW') then el.target = '#' .. id end
          return el
        end
      end })
    end
    blocks[#blocks + 1] = b
  end

  -- on the web a table scrolls inside a box of its own, so that a wide one
  -- never makes the page wider than a phone's screen
  if FORMAT:match('html') then
    local ntables = 0
    blocks = pandoc.walk_block(pandoc.Div(blocks), {
      -- the caption goes above the box, so that it stays readable while
      -- the table scrolls; the table is still labelled by it
      Table = function(tbl)
        local wrap = pandoc.Div({ tbl }, pandoc.Attr('', { 'table-wrap' }))
        local cap = tbl.caption and tbl.caption.long or {}
        if #cap == 0 then return wrap end
        ntables = ntables + 1
        local id = 'table-caption-' .. ntables
        tbl.caption = { long = {}, short = nil }
        tbl.attr = pandoc.Attr(tbl.attr.identifier, tbl.attr.classes, { ['aria-labelledby'] = id })
        wrap.content = { tbl }
        return pandoc.Div({ pandoc.Div(cap, pandoc.Attr(id, { 'table-caption' })), wrap },
                          pandoc.Attr('', { 'table' }))
      end,
      -- and so does display math (MathML's own box does not scroll)
      -- the answers to the exercises are folded away until the reader
      -- opens them
      Div = function(el)
        if has_class(el, 'exercise-answer') then
          local label = (lang == 'ru') and 'Показать ответы' or 'Show the answers'
          local out = { pandoc.RawBlock('html', '<details class="exercise-answers"><summary>' ..
                                        label .. '</summary>') }
          for _, b in ipairs(el.content) do out[#out + 1] = b end
          out[#out + 1] = pandoc.RawBlock('html', '</details>')
          return pandoc.Div(out, el.attr)
        end
      end,
      Math = function(m)
        if m.mathtype == 'DisplayMath' then
          return pandoc.Span({ m }, pandoc.Attr('', { 'display-math' }))
        end
        -- inline math cannot break across lines: on a narrow screen a long
        -- formula (.wide: over 36 characters as text, more than a third of
        -- a phone's line) scrolls inside its own box instead (book/
        -- style.css); a shorter one stays inline, so that no line breaks
        -- between it and the bracket or word before it
        local classes = { 'inline-math' }
        if (utf8.len(math_text(m.text)) or 0) > 36 then classes[2] = 'wide' end
        return pandoc.Span({ m }, pandoc.Attr('', classes))
      end,
    }).content
  end

  -- 4. titles and navigation of this edition
  for _, key in ipairs({ 'title', 'prev-title', 'next-title', 'booktitle',
                         'subtitle', 'author' }) do
    local v = meta[key .. '-' .. lang]
    if v ~= nil then meta[key] = v end
  end
  if meta['title'] == nil then meta['title'] = meta['booktitle'] end
  meta['pagetitle'] = meta['title']
  local other = (lang == 'en') and 'ru' or 'en'
  meta['other-lang'] = other
  meta['twin-label'] = (lang == 'en') and 'Русский' or 'English'
  return pandoc.Pandoc(blocks, meta)
end
