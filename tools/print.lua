-- print.lua: the book's filter for the PDFs only, run after tools/book.lua
-- (tools/pdf.sh). It changes how things are set in print, never what the
-- text says:
--   1. headings with math or quotation marks get a bookmark of plain text
--      (\texorpdfstring), so the PDF's outline shows "2/(n_in + n_out)" and
--      “…” instead of TeX source; every unnumbered chapter (About, the
--      glossary, the index) sets its own running head;
--   2. a code chunk's header line stays on the page of the chunk's first
--      lines (\chunkbegin / \chunkheadend, book/header.tex), and carries a
--      \label for the page numbers of the index;
--   3. the cross-references under a chunk are set ragged right;
--   4. inline code may break after _ / . , and -> (\texttt has no hyphens);
--   5. a table gets column widths from its contents: natural widths when it
--      fits the line, otherwise wrapped columns no narrower than their
--      longest word, in a smaller size when even that does not fit.

if FORMAT ~= 'latex' then return {} end

package.path = 'tools/?.lua;' .. package.path
local util = require('filter-util')
local has_class, meta_str = util.has_class, util.meta_str

local lang = 'en'

local function latex_of(inlines)
  local s = pandoc.write(pandoc.Pandoc({ pandoc.Plain(inlines) }), 'latex')
  return (s:gsub('%s+$', ''))
end

-- ------------------------------------------------------------ bookmarks --
local TEX_TEXT = {
  alpha = 'α', beta = 'β', gamma = 'γ', delta = 'δ', epsilon = 'ε', varepsilon = 'ε',
  zeta = 'ζ', eta = 'η', theta = 'θ', lambda = 'λ', mu = 'μ', nu = 'ν', xi = 'ξ',
  pi = 'π', rho = 'ρ', sigma = 'σ', tau = 'τ', phi = 'φ', varphi = 'φ', chi = 'χ',
  psi = 'ψ', omega = 'ω', Gamma = 'Γ', Delta = 'Δ', Theta = 'Θ', Lambda = 'Λ',
  Sigma = 'Σ', Phi = 'Φ', Psi = 'Ψ', Omega = 'Ω', Pi = 'Π',
  cdot = '·', times = '×', sqrt = '√', sum = 'Σ', prod = '∏', infty = '∞',
  to = '→', rightarrow = '→', leftarrow = '←', le = '≤', leq = '≤', ge = '≥',
  geq = '≥', ne = '≠', neq = '≠', approx = '≈', ldots = '…', cdots = '⋯',
  odot = '⊙', otimes = '⊗', oplus = '⊕', ['in'] = '∈', partial = '∂', nabla = '∇',
  pm = '±', mp = '∓', log = 'log', exp = 'exp', max = 'max', min = 'min',
  ell = 'ℓ', top = 'ᵀ', prime = '′', lvert = '|', rvert = '|', vert = '|',
  lVert = '‖', rVert = '‖', mid = '|', ['%'] = '%', ['#'] = '#', ['&'] = '&',
  ['_'] = '_', ['{'] = '{', ['}'] = '}',
}
local SUB = { ['0'] = '₀', ['1'] = '₁', ['2'] = '₂', ['3'] = '₃', ['4'] = '₄',
              ['5'] = '₅', ['6'] = '₆', ['7'] = '₇', ['8'] = '₈', ['9'] = '₉' }
local SUP = { ['0'] = '⁰', ['1'] = '¹', ['2'] = '²', ['3'] = '³', ['4'] = '⁴',
              ['5'] = '⁵', ['6'] = '⁶', ['7'] = '⁷', ['8'] = '⁸', ['9'] = '⁹',
              ['-'] = '⁻', ['+'] = '⁺', T = 'ᵀ' }

-- TeX math as the plain text a bookmark can show.
local function math_text(tex)
  local s = tex
  -- commands whose argument is the text: \text{in} -> in
  for _ = 1, 3 do
    s = s:gsub('\\(%a+)%s*(%b{})', function(cmd, arg)
      if cmd == 'text' or cmd == 'mathrm' or cmd == 'mathit' or cmd == 'mathbf' or
         cmd == 'operatorname' or cmd == 'mathsf' or cmd == 'mathtt' or cmd == 'textrm' or
         cmd == 'boldsymbol' or cmd == 'bm' or cmd == 'mathcal' or cmd == 'hat' or
         cmd == 'bar' or cmd == 'tilde' or cmd == 'vec' or cmd == 'overline' then
        return arg:sub(2, -2)
      end
      if cmd == 'mathbb' then
        local m = { R = 'ℝ', N = 'ℕ', Z = 'ℤ', E = '𝔼' }
        return m[arg:sub(2, -2)] or arg:sub(2, -2)
      end
      if cmd == 'sqrt' then return '√(' .. arg:sub(2, -2) .. ')' end
      return nil
    end)
  end
  s = s:gsub('\\frac%s*(%b{})%s*(%b{})', function(a, b) return a:sub(2, -2) .. '/' .. b:sub(2, -2) end)
  s = s:gsub('\\left', ''):gsub('\\right', ''):gsub('\\[bB]igg?[lr]?', '')
  s = s:gsub('\\[,;:! ]', ' '):gsub('\\q?quad', ' ')
  s = s:gsub('\\(%a+)', function(c) return TEX_TEXT[c] or c end)
  s = s:gsub('\\([%%#&_{}])', '%1')
  local function script(marks, fallback)
    return function(body)
      local b = body:gsub('^{', ''):gsub('}$', '')
      local out = ''
      for ch in b:gmatch('.') do
        if not marks[ch] then return fallback .. b end
        out = out .. marks[ch]
      end
      return out
    end
  end
  s = s:gsub('_(%b{})', script(SUB, '_')):gsub('_(%w)', script(SUB, '_'))
  s = s:gsub('%^(%b{})', script(SUP, '^')):gsub('%^(%w)', script(SUP, '^'))
  s = s:gsub('[{}]', ''):gsub('%s+', ' ')
  return s
end

local function quotes()
  if lang == 'ru' then return { '«', '»', '„', '“' } end
  return { '“', '”', '‘', '’' }
end

-- A heading's text as a bookmark shows it, escaped for \texorpdfstring's
-- second argument.
local function plain_of(inlines)
  local q = quotes()
  local out = {}
  local function go(list, depth)
    for _, il in ipairs(list) do
      local t = il.t
      if t == 'Str' then out[#out + 1] = il.text
      elseif t == 'Space' or t == 'SoftBreak' or t == 'LineBreak' then out[#out + 1] = ' '
      elseif t == 'Code' then out[#out + 1] = il.text
      elseif t == 'Math' then out[#out + 1] = math_text(il.text)
      elseif t == 'Quoted' then
        local single = il.quotetype == 'SingleQuote'
        out[#out + 1] = single and q[3] or q[1]
        go(il.content, depth + 1)
        out[#out + 1] = single and q[4] or q[2]
      elseif t == 'Note' then -- a footnote is not part of the bookmark
      elseif il.content then go(il.content, depth)
      end
    end
  end
  go(inlines, 0)
  local s = table.concat(out)
  s = s:gsub('\\', '/'):gsub('([%%#&_{}$])', '\\%1'):gsub('%^', '\\textasciicircum{}')
       :gsub('~', '\\textasciitilde{}')
  return s
end

-- Quotation marks in a heading as the characters themselves (pandoc writes
-- ``…'', which is right on the page but raw in a bookmark).
local function unicode_quotes(inlines)
  local q = quotes()
  return pandoc.walk_inline(pandoc.Span(inlines), {
    Quoted = function(el)
      local single = el.quotetype == 'SingleQuote'
      local out = { pandoc.Str(single and q[3] or q[1]) }
      for _, x in ipairs(el.content) do out[#out + 1] = x end
      out[#out + 1] = pandoc.Str(single and q[4] or q[2])
      return out
    end,
  }).content
end

local LEVELS = { 'chapter', 'section', 'subsection', 'subsubsection', 'paragraph', 'subparagraph' }

local function needs_plain(inlines)
  local found = false
  pandoc.walk_inline(pandoc.Span(inlines), {
    Math = function() found = true end,
    Quoted = function() found = true end,
  })
  return found
end

local function header(el)
  local unnumbered = has_class(el, 'unnumbered')
  local mark, root = nil, nil
  if el.level == 1 and unnumbered then
    local text = latex_of(unicode_quotes(el.content))
    -- and its bookmark is not nested under the last part
    mark = pandoc.RawBlock('latex', '\\markboth{\\MakeUppercase{' .. text .. '}}{\\MakeUppercase{' ..
                                    text .. '}}')
    root = pandoc.RawBlock('latex', '\\bookmarksetup{startatroot}')
  end
  if not needs_plain(el.content) then
    if mark then return { root, el, mark } end
    return nil
  end
  local cmd = LEVELS[el.level] or 'subparagraph'
  local body = latex_of(unicode_quotes(el.content))
  local plain = plain_of(el.content)
  local title = '\\texorpdfstring{' .. body .. '}{' .. plain .. '}'
  local id = el.identifier
  local s = '\\' .. cmd .. (unnumbered and '*' or '') .. '{' .. title .. '}'
  if id ~= '' then s = s .. '\\label{' .. id .. '}' end
  if id ~= '' then s = '\\hypertarget{' .. id .. '}{%\n' .. s .. '}' end
  if unnumbered then s = s .. '\n\\addcontentsline{toc}{' .. cmd .. '}{' .. title .. '}' end
  local out = { pandoc.RawBlock('latex', s) }
  if root then table.insert(out, 1, root) end
  if mark then out[#out + 1] = mark end
  return out
end

-- ---------------------------------------------------------- inline code --
local TT_ESC = {
  ['\\'] = '\\textbackslash{}', ['{'] = '\\{', ['}'] = '\\}', ['#'] = '\\#',
  ['$'] = '\\$', ['%'] = '\\%', ['&'] = '\\&', ['~'] = '\\textasciitilde{}',
  ['^'] = '\\textasciicircum{}', ["'"] = '\\textquotesingle{}', ['`'] = '\\textasciigrave{}',
  ['<'] = '\\textless{}', ['>'] = '\\textgreater{}', ['-'] = '-{}',
}

local function tt(text)
  local out = {}
  local n = #text
  local i = 1
  while i <= n do
    local c = text:sub(i, i)
    local nx = text:sub(i + 1, i + 1)
    if c == '_' then
      out[#out + 1] = '\\_'
      -- a break after an underscore, not between two of them
      if nx ~= '_' and nx ~= '' and i > 1 then out[#out + 1] = '\\allowbreak{}' end
    elseif c == '-' and nx == '>' then
      out[#out + 1] = '-\\textgreater{}\\allowbreak{}'
      i = i + 1
    elseif c == '/' or c == ',' or (c == '.' and nx:match('%a')) then
      out[#out + 1] = c
      if nx ~= '' and i > 1 then out[#out + 1] = '\\allowbreak{}' end
    elseif TT_ESC[c] then
      out[#out + 1] = TT_ESC[c]
    elseif c == ' ' then
      out[#out + 1] = '\\ '
    else
      out[#out + 1] = c
    end
    i = i + 1
  end
  return '\\texttt{' .. table.concat(out) .. '}'
end

local inline_code = {
  Code = function(el) return pandoc.RawInline('latex', tt(el.text)) end,
}

-- --------------------------------------------------------------- chunks --
local function code_lines(block)
  local n = 1
  for _ in block.text:gmatch('\n') do n = n + 1 end
  return n
end

local function chunk(div)
  local head, code = nil, nil
  for i, b in ipairs(div.content) do
    if not head and (b.t == 'Plain' or b.t == 'Para') then head = i end
    if not code and b.t == 'CodeBlock' then code = i end
  end
  if not head or not code then return nil end
  -- the header line and the first lines of code go on one page; a short
  -- chunk is kept whole
  local n = code_lines(div.content[code])
  local keep = (n <= 8) and n or 5
  local h = div.content[head]
  h.content[#h.content + 1] = pandoc.RawInline('latex', '\\label{' .. div.identifier .. '}\\chunkheadend')
  -- the footer: ragged right, small
  for i = code + 1, #div.content do
    local b = div.content[i]
    if b.t == 'Para' or b.t == 'Plain' then
      div.content[i] = pandoc.Div({ pandoc.RawBlock('latex', '\\begingroup\\chunkfoot'), b,
                                    pandoc.RawBlock('latex', '\\par\\endgroup') })
    end
  end
  return { pandoc.RawBlock('latex', '\\chunkbegin{' .. keep .. '}'), div,
           pandoc.RawBlock('latex', '\\chunkend') }
end

-- --------------------------------------------------------------- tables --
-- Estimated width in points of a cell's text at 10pt: DejaVu Serif's digits
-- and capitals are wide, code is set at 0.9.
local function text_width(s)
  local w = 0
  for _, cp in utf8.codes(s) do
    local c = utf8.char(cp)
    if c:match('%d') then w = w + 6.4
    elseif c:match('%u') then w = w + 7.2
    elseif c == ' ' then w = w + 3.2
    elseif cp >= 0x410 and cp <= 0x42F then w = w + 7.2
    elseif cp >= 0x430 and cp <= 0x45F then w = w + 6.4
    else w = w + 5.8 end
  end
  return w
end

local function cell_measure(blocks)
  local longest, total = 0, 0
  local s = pandoc.utils.stringify(pandoc.Div(blocks))
  -- math source is longer than what it shows
  s = s:gsub('\\%a+', 'x'):gsub('[{}]', '')
  total = text_width(s)
  for word in s:gmatch('%S+') do
    local w = text_width(word) + 5
    if w > longest then longest = w end
  end
  return total, longest
end

local LINE = 470 -- \linewidth in points (A4, 2.2 cm margins)
local COLSEP = 12 -- 2\tabcolsep

local function table_widths(tbl)
  local st = pandoc.utils.to_simple_table(tbl)
  local ncols = #st.aligns
  if ncols == 0 then return nil end
  local natural, longest = {}, {}
  for j = 1, ncols do natural[j] = 0; longest[j] = 0 end
  local function measure(row)
    for j = 1, ncols do
      if row[j] then
        local t, l = cell_measure(row[j])
        if t > natural[j] then natural[j] = t end
        if l > longest[j] then longest[j] = l end
      end
    end
  end
  measure(st.headers)
  for _, r in ipairs(st.rows) do measure(r) end
  local size = nil
  local avail = LINE - ncols * COLSEP
  local sum_nat, sum_long = 0, 0
  for j = 1, ncols do sum_nat = sum_nat + natural[j]; sum_long = sum_long + longest[j] end
  local scale = 1
  if sum_nat <= avail then
    for j = 1, ncols do st.widths[j] = 0 end
  else
    -- a column never narrower than its longest word: if the words do not
    -- fit, a smaller size
    if sum_long > avail then size = '\\small'; scale = 0.9 end
    if sum_long * scale > avail then size = '\\footnotesize'; scale = 0.8 end
    if sum_nat * scale <= avail then
      for j = 1, ncols do st.widths[j] = 0 end
    else
      -- water-filling: every column gets its natural width up to an equal
      -- share, the wide ones share the rest; none below its longest word
      local w, fixed = {}, {}
      local left, open = avail, ncols
      for j = 1, ncols do
        w[j] = longest[j] * scale
        fixed[j] = false
      end
      local changed = true
      while changed do
        changed = false
        local share = left / open
        for j = 1, ncols do
          if not fixed[j] and natural[j] * scale <= share then
            w[j] = natural[j] * scale
            fixed[j] = true
            left = left - w[j]
            open = open - 1
            changed = true
          end
        end
        if open == 0 then break end
      end
      -- the open columns: their share, but at least their longest word
      if open > 0 then
        local need, want = 0, 0
        for j = 1, ncols do
          if not fixed[j] then need = need + longest[j] * scale; want = want + natural[j] * scale end
        end
        for j = 1, ncols do
          if not fixed[j] then
            local lw = longest[j] * scale
            w[j] = lw + (left - need) * ((natural[j] * scale - lw) / math.max(want - need, 1))
          end
        end
      end
      local total = 0
      for j = 1, ncols do total = total + w[j] end
      for j = 1, ncols do
        st.widths[j] = math.max(w[j], 1) / math.max(total, avail)
      end
    end
  end
  local out = pandoc.utils.from_simple_table(st)
  if size then
    return { pandoc.RawBlock('latex', '\\begingroup' .. size), out, pandoc.RawBlock('latex', '\\endgroup') }
  end
  return out
end

-- ------------------------------------------------------------- document --
return {
  { Meta = function(m)
      lang = pandoc.utils.stringify(m.lang or 'en')
    end },
  { Header = header },
  { Div = function(el)
      if has_class(el, 'chunk') then return chunk(el) end
    end,
    Table = table_widths },
  { Para = function(p) return pandoc.walk_block(p, inline_code) end,
    Plain = function(p) return pandoc.walk_block(p, inline_code) end },
}
