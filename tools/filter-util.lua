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

return M
