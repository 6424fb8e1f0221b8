-- web.lua: the HTML edition's pandoc filter, run after tools/book.lua.
--
-- Metadata it reads:
--   lang       en or ru
--   slug       the page (NN-slug, identifiers, glossary, index, search)
--   chapter    a chapter page's number
--   iddefs     the library's identifiers and their definitions, a line each:
--              NAME PAGE#LABEL... (written by tools/nwpandoc.awk)
--   searchdir  where to write the page's part of the search index
--
-- What it does:
--   1. math: writes every formula as MathML itself and mends what Chromium
--      renders badly: an accent as a combining character (U+0302 and the
--      like, which Chromium may lose or draw wide) becomes the spacing
--      accent (U+02C6 ...) on an <mover accent="true">; parentheses that
--      TeX would not stretch (no \left ... \right in the formula) are not
--      stretchy, which Chromium pads loosely; an operator name such as
--      \operatorname{LSE} right before a parenthesis is an <mi>, so that
--      no operator spacing separates it from its argument;
--   2. identifiers in prose: inline code that is exactly a name the
--      identifier index lists links to its definition (the one in this
--      chapter, else the first), not in headings, links or chunk footers;
--   3. the page's contents: the sections of a chapter page (levels 2 and 3,
--      numbered as the writer numbers them) as a list in the metadata
--      page-toc, which book/template.html shows as a sidebar on wide
--      screens and a folded list on phones; and the labels of the
--      navigation (index, search, contents);
--   4. the search index: one record per section (per entry on the
--      identifier index) with its title and text, written as
--      SEARCHDIR/SLUG.js, lines of a JavaScript array that the Makefile
--      joins into the edition's search-index.js (book/search.js reads it).

package.path = 'tools/?.lua;' .. package.path
local util = require('filter-util')
local has_class, meta_str = util.has_class, util.meta_str

local lang, slug = 'en', ''

-- 1. math ------------------------------------------------------------------
-- combining accent -> spacing accent
local ACCENTS = {
  ['\u{0300}'] = '\u{0060}', ['\u{0301}'] = '\u{00B4}', ['\u{0302}'] = '\u{02C6}',
  ['\u{0303}'] = '\u{02DC}', ['\u{0304}'] = '\u{00AF}', ['\u{0306}'] = '\u{02D8}',
  ['\u{0307}'] = '\u{02D9}', ['\u{0308}'] = '\u{00A8}', ['\u{030C}'] = '\u{02C7}',
  ['\u{20D7}'] = '\u{2192}', ['\u{203E}'] = '\u{00AF}',
}

-- The <mover> whose last child is an accent gets accent="true" (MathML
-- Core reads it there, not on the <mo>): a pass over the tags with a stack.
local function mark_accents(s)
  local opens, marks = {}, {}
  local pos = 1
  while true do
    local a, b, close = s:find('<(/?)mover>', pos)
    if not a then break end
    if close == '' then
      opens[#opens + 1] = a
    else
      local open = table.remove(opens)
      if open and s:sub(1, a - 1):match('<mo[^>]*data%-accent="1">[^<]*</mo>$') then
        marks[open] = true
      end
    end
    pos = b + 1
  end
  local out, last = {}, 1
  for i = 1, #s do
    if marks[i] then
      out[#out + 1] = s:sub(last, i + 5)          -- '<mover'
      out[#out + 1] = ' accent="true"'
      last = i + 6
    end
  end
  out[#out + 1] = s:sub(last)
  return (table.concat(out):gsub(' data%-accent="1"', ''))
end

local function fix_math(m)
  local s = pandoc.write(pandoc.Pandoc({ pandoc.Plain({ m }) }), 'html5',
                         { html_math_method = 'mathml' })
  s = s:gsub('\n$', '')
  -- accents: a combining character, or a stretchy bar for \bar
  s = s:gsub('<mo accent="true">([^<]*)</mo>', function(c)
    local spacing = ACCENTS[c]
    if spacing then return '<mo stretchy="false" data-accent="1">' .. spacing .. '</mo>' end
    return '<mo data-accent="1">' .. c .. '</mo>'
  end)
  s = mark_accents(s)
  -- fences TeX would not stretch
  if not m.text:find('\\left', 1, true) then
    s = s:gsub('<mo stretchy="true" form="(%a+)">', '<mo stretchy="false" form="%1">')
  end
  -- the brace of cases spans its rows
  if m.text:find('\\begin{cases}', 1, true) then
    s = s:gsub('<mo stretchy="false" form="prefix">{</mo>', '<mo stretchy="true" form="prefix">{</mo>', 1)
  end
  -- a norm's bars hug what they enclose, as TeX sets \| ... \|
  for _, bar in ipairs({ '‖', '∥' }) do   -- (UTF-8: whole strings, not a class)
    s = s:gsub('<mo([^>]*)>' .. bar .. '</mo>', function(attrs)
      attrs = attrs:gsub(' lspace="[^"]*"', ''):gsub(' rspace="[^"]*"', '')
      return '<mo' .. attrs .. ' lspace="0" rspace="0">‖</mo>'
    end)
  end
  -- an operator name right before its parenthesised argument
  s = s:gsub('<mo>(%a%a+)</mo>(<mrow><mo stretchy="%a+" form="prefix">)', '<mi>%1</mi>%2')
  s = s:gsub('<mo>(%a%a+)</mo>(<mo[^>]*form="prefix">)', '<mi>%1</mi>%2')
  -- and before anything else (\log s) a thin space after it, as in TeX,
  -- not an operator's space on both sides; not as the base of a script
  s = s:gsub('()<mo>(%a%a+)</mo>', function(pos, name)
    local before = s:sub(math.max(1, pos - 12), pos - 1)
    if before:match('<m%a+>$') and not before:match('<mrow>$') then return nil end
    return '<mi>' .. name .. '</mi><mspace width="0.1667em"></mspace>'
  end)
  -- a minus sign after an opening fence, a comma or a relation is a sign,
  -- not an operation between two terms
  s = s:gsub('(form="prefix">[%(%[{]</mo>)<mo>−</mo>', '%1<mo form="prefix">−</mo>')
  s = s:gsub('(<mo>[,=<>≤≥]</mo>)<mo>−</mo>', '%1<mo form="prefix">−</mo>')
  return pandoc.RawInline('html', s)
end

-- 2. identifiers in prose --------------------------------------------------
local iddefs = nil

local function load_iddefs(path)
  iddefs = {}
  local f = path and io.open(path, 'r')
  if not f then return end
  for line in f:lines() do
    local name, rest = line:match('^(%S+)%s+(.*)$')
    if name then
      local t = {}
      for target in rest:gmatch('%S+') do t[#t + 1] = target end
      iddefs[name] = t
    end
  end
  f:close()
end

local function id_target(name)
  local t = iddefs[name]
  if not t then return nil end
  local here = slug .. '.html#'
  for _, target in ipairs(t) do
    if target:sub(1, #here) == here then return target:sub(#here) end
  end
  return t[1]
end

local CONTAINERS = { Emph = true, Strong = true, Span = true, Quoted = true, Strikeout = true,
                     Underline = true, SmallCaps = true, Superscript = true, Subscript = true }

local function link_inlines(inlines)
  local out = pandoc.List()
  for _, il in ipairs(inlines) do
    if il.t == 'Code' then
      local target = id_target(il.text)
      if target then
        out:insert(pandoc.Link({ il }, target, '', pandoc.Attr('', { 'id-ref' })))
      else
        out:insert(il)
      end
    elseif il.t == 'Link' or il.t == 'Image' or il.t == 'Cite' or il.t == 'Note' then
      out:insert(il)
    elseif il.t == 'Span' and (has_class(il, 'chunk-foot') or has_class(il, 'chunk-head')) then
      out:insert(il)
    elseif CONTAINERS[il.t] then
      il.content = link_inlines(il.content)
      out:insert(il)
    else
      out:insert(il)
    end
  end
  return out
end

-- 3. the page's contents ---------------------------------------------------
local function html_escape(s)
  return (s:gsub('&', '&amp;'):gsub('<', '&lt;'):gsub('>', '&gt;'):gsub('"', '&quot;'))
end

local function page_toc(blocks, chapter)
  local items = {}
  local n2, n3 = 0, 0
  local function walk(bs)
    for _, b in ipairs(bs) do
      if b.t == 'Header' and (b.level == 2 or b.level == 3) and b.identifier ~= '' then
        local numbered = not has_class(b, 'unnumbered')
        local num = ''
        if numbered and b.level == 2 then
          n2 = n2 + 1; n3 = 0
          num = chapter .. '.' .. n2
        elseif numbered then
          n3 = n3 + 1
          num = chapter .. '.' .. n2 .. '.' .. n3
        end
        items[#items + 1] = { level = b.level, id = b.identifier, num = num,
                              text = pandoc.utils.stringify(b.content) }
      elseif b.t == 'Div' then
        walk(b.content)
      end
    end
  end
  walk(blocks)
  if #items == 0 then return nil end
  local out, open3 = { '<ul>' }, false
  for i, it in ipairs(items) do
    if it.level == 3 and not open3 then
      if i == 1 then out[#out + 1] = '<li>' end
      out[#out + 1] = '<ul>'
      open3 = true
    elseif it.level == 2 then
      if open3 then out[#out + 1] = '</ul>'; open3 = false end
      if i > 1 then out[#out + 1] = '</li>' end
    end
    local li = '<a href="#' .. html_escape(it.id) .. '">' ..
               (it.num ~= '' and ('<span class="toc-num">' .. it.num .. '</span> ') or '') ..
               html_escape(it.text) .. '</a>'
    if it.level == 2 then out[#out + 1] = '<li>' .. li
    else out[#out + 1] = '<li>' .. li .. '</li>' end
  end
  if open3 then out[#out + 1] = '</ul>' end
  out[#out + 1] = '</li></ul>'
  return table.concat(out, '\n')
end

-- 4. the search index ------------------------------------------------------
local function json_str(s)
  s = s:gsub('[%c"\\]', function(c)
    if c == '"' then return '\\"' elseif c == '\\' then return '\\\\'
    elseif c == '\n' or c == '\t' or c == '\r' then return ' ' end
    return ''
  end)
  -- </script> never ends a script that includes the index
  s = s:gsub('</', '<\\/')
  return '"' .. s .. '"'
end

local function search_records(blocks, page_title)
  local recs, cur = {}, nil
  local function add_text(t)
    if cur and t ~= '' then cur.x[#cur.x + 1] = t end
  end
  local function walk(bs)
    for _, b in ipairs(bs) do
      if b.t == 'Header' then
        cur = { id = b.identifier, t = util.plain_text(b.content), x = {} }
        recs[#recs + 1] = cur
      elseif b.t == 'Div' then
        walk(b.content)
      elseif b.t == 'BulletList' and slug == 'identifiers' then
        -- an entry of the index is a record of its own
        for _, item in ipairs(b.content) do
          local first = item[1] and item[1].content and item[1].content[1]
          if first and first.t == 'Link' and first.identifier:match('^id%-') then
            recs[#recs + 1] = { id = first.identifier, t = pandoc.utils.stringify(first.content),
                                x = { util.block_text(pandoc.Div(item)) } }
          else
            add_text(util.block_text(pandoc.Div(item)))
          end
        end
      elseif b.t == 'BulletList' or b.t == 'OrderedList' then
        for _, item in ipairs(b.content) do walk(item) end
      elseif b.t ~= 'RawBlock' and b.t ~= 'CodeBlock' then
        add_text(util.block_text(b))
      end
    end
  end
  walk(blocks)
  local lines = {}
  for _, r in ipairs(recs) do
    if r.id ~= '' then
      local x = table.concat(r.x, ' '):gsub('%s+', ' ')
      lines[#lines + 1] = '[' .. json_str(slug .. '.html') .. ',' .. json_str(r.id) .. ',' ..
                          json_str(page_title) .. ',' .. json_str(r.t) .. ',' .. json_str(x) .. '],'
    end
  end
  return table.concat(lines, '\n') .. '\n'
end

-- the labels of the navigation, per edition
local LABELS = {
  en = { ['index-label'] = 'Index', ['search-label'] = 'Search', ['search-button'] = 'Search',
         ['toc-label'] = 'On this page' },
  ru = { ['index-label'] = 'Указатель', ['search-label'] = 'Поиск', ['search-button'] = 'Найти',
         ['toc-label'] = 'На этой странице' },
}

function Pandoc(doc)
  local meta = doc.meta
  lang = meta_str(meta, 'lang') or 'en'
  slug = meta_str(meta, 'slug') or ''
  local chapter = meta_str(meta, 'chapter')
  load_iddefs(meta_str(meta, 'iddefs'))

  -- the search index reads the text before the math is raw HTML: a
  -- formula is its plain text (filter-util's math_text: symbols, no markup)
  local dir = meta_str(meta, 'searchdir')
  local records = nil
  if dir and slug ~= '' and slug ~= 'search' then
    records = search_records(doc.blocks, meta_str(meta, 'title') or '')
  end

  local blocks = pandoc.walk_block(pandoc.Div(doc.blocks), { Math = fix_math }).content
  if slug ~= 'identifiers' and next(iddefs) then
    local function f(el) el.content = link_inlines(el.content); return el end
    blocks = pandoc.walk_block(pandoc.Div(blocks), { Para = f, Plain = f }).content
  end

  for k, v in pairs(LABELS[lang] or LABELS.en) do meta[k] = pandoc.MetaString(v) end
  if chapter then
    local toc = page_toc(blocks, chapter)
    if toc then meta['page-toc'] = pandoc.MetaBlocks({ pandoc.RawBlock('html', toc) }) end
  end

  if records then
    os.execute('mkdir -p "' .. dir .. '"')
    local f = io.open(dir .. '/' .. slug .. '.js', 'w')
    if not f then io.stderr:write('web.lua: cannot write ' .. dir .. '/' .. slug .. '.js\n'); os.exit(1) end
    f:write(records)
    f:close()
  end
  return pandoc.Pandoc(blocks, meta)
end
