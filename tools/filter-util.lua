-- filter-util.lua -- what the weave's Lua filters (tools/book.lua,
-- tools/web.lua, tools/print.lua) share. Each loads it with
--   package.path = 'tools/?.lua;' .. package.path
--   local util = require('filter-util')
-- (pandoc runs from the project's root).
local M = {}

-- 1 when el (a block or inline with classes) has the class
function M.has_class(el, class)
  for _, c in ipairs(el.classes or {}) do
    if c == class then return true end
  end
  return false
end

-- a metadata value as a plain string, or nil when there is none
function M.meta_str(meta, key)
  local v = meta[key]
  if v == nil then return nil end
  return pandoc.utils.stringify(v)
end

-- A formula as plain text, for a figure's text alternative and the search
-- index: TeX's names of symbols become the symbols, markup goes, and what is
-- left reads as typed.
local TEX_SYMBOLS = {
  varepsilon = 'ε', epsilon = 'ε', alpha = 'α', beta = 'β', gamma = 'γ',
  delta = 'δ', Delta = 'Δ', eta = 'η', theta = 'θ', lambda = 'λ', mu = 'μ',
  pi = 'π', rho = 'ρ', sigma = 'σ', tau = 'τ', ell = 'ℓ', odot = '⊙',
  propto = '∝', cdot = '·', le = '≤', leq = '≤', ge = '≥', geq = '≥',
  neq = '≠', approx = '≈', to = '→', infty = '∞', times = '×',
  sqrt = '√', partial = '∂', sum = 'Σ', ldots = '…', cdots = '⋯', dots = '…',
  mid = '|', lVert = '‖', rVert = '‖', Vert = '‖', lfloor = '⌊', rfloor = '⌋',
  lceil = '⌈', rceil = '⌉', langle = '⟨', rangle = '⟩', ['in'] = '∈',
  prod = 'Π', nabla = '∇', omega = 'ω', phi = 'φ', psi = 'ψ', kappa = 'κ',
  xi = 'ξ', zeta = 'ζ', chi = 'χ', Sigma = 'Σ', Pi = 'Π', Theta = 'Θ',
  Lambda = 'Λ', Omega = 'Ω', Gamma = 'Γ', iota = 'ι', nu = 'ν', upsilon = 'υ',
  neg = '¬', land = '∧', lor = '∨', cap = '∩', cup = '∪', subset = '⊂',
  oplus = '⊕', otimes = '⊗', circ = '∘', pm = '±', ast = '∗', star = '⋆',
  leftarrow = '←', rightarrow = '→', mapsto = '↦', gets = '←', equiv = '≡',
  sim = '∼', ll = '≪', gg = '≫', forall = '∀', exists = '∃', top = '⊤',
}
function M.math_text(tex)
  local t = tex:gsub('\\\\', ' '):gsub('\\[,;:!]', ' '):gsub('\\q?quad', ' ')
  t = t:gsub('\\|', '‖'):gsub('\\begin%b{}', ' '):gsub('\\end%b{}', ' ')
  t = t:gsub('([^\\])&', '%1 ')
  -- escaped characters stand for themselves (braces kept apart for now)
  t = t:gsub('\\{', '\1'):gsub('\\}', '\2'):gsub('\\([_%%#&$])', '%1')
  t = t:gsub('\\(%a+)', function(name)
    if TEX_SYMBOLS[name] then return TEX_SYMBOLS[name] end
    return ''   -- \text, \mathrm, \hat, \left, \right, ...: markup
  end)
  t = t:gsub('[{}]', ''):gsub('\1', '{'):gsub('\2', '}'):gsub('%s+', ' ')
  return (t:gsub('^ ', ''):gsub(' $', ''))
end

local function math_as_text(m) return pandoc.Str(M.math_text(m.text)) end

-- inlines as plain text, their formulas as text
function M.plain_text(inlines)
  return pandoc.utils.stringify(pandoc.walk_inline(pandoc.Span(inlines), { Math = math_as_text }))
end

-- a block as plain text: formulas as text, a space between table cells
function M.block_text(b)
  return pandoc.utils.stringify(pandoc.walk_block(pandoc.Div({ b }), {
    Math = math_as_text,
    Plain = function(p) p.content:insert(pandoc.Space()); return p end,
  }))
end

return M
