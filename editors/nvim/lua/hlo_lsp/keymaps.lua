-- Buffer-local key maps set when the server attaches, following each Neovim
-- version's own conventions:
--
-- * Neovim 0.11+ maps `K` (hover), `grr` (references), `gra` (code action) and
--   `grn` (rename) globally for every LSP buffer (:help lsp-defaults); the
--   plugin keeps them and adds only `gd` (definition), which Neovim leaves to
--   Vim's own "go to local declaration".
-- * Before 0.11 there are no LSP maps: `K` runs 'keywordprg' (man) and `gd`
--   searches the word. The plugin maps `K` hover, `gd` definition,
--   `gr` references and `<leader>ca` code action, buffer-local.
--
-- setup({ keymaps = false }) sets none; setup({ keymaps = { references = 'gR',
-- code_action = false } }) changes or disables single maps (merged over the
-- defaults of the running version).
local compat = require('hlo_lsp.compat')

local M = {}

--- The actions that can be mapped: name -> { function, description }.
M.actions = {
  hover = { function() vim.lsp.buf.hover() end, 'hlo-lsp: hover' },
  definition = { function() vim.lsp.buf.definition() end, 'hlo-lsp: go to definition' },
  references = { function() vim.lsp.buf.references() end, 'hlo-lsp: references' },
  code_action = { function() vim.lsp.buf.code_action() end, 'hlo-lsp: code action (recompile)' },
}

--- The default maps of the running version: action -> lhs.
function M.defaults()
  if compat.nvim_0_11 then
    return { definition = 'gd' }
  end
  return { hover = 'K', definition = 'gd', references = 'gr', code_action = '<leader>ca' }
end

--- The maps `opt` (the `keymaps` option: nil, false or a table) asks for.
---@return table<string, string> action -> lhs
function M.resolve(opt)
  if opt == false then
    return {}
  end
  local maps = M.defaults()
  if type(opt) == 'table' then
    for action, lhs in pairs(opt) do
      if M.actions[action] ~= nil then
        maps[action] = lhs ~= false and lhs or nil
      end
    end
  end
  return maps
end

--- Set the maps on `bufnr` (buffer-local, silent).
function M.attach(bufnr, opt)
  for action, lhs in pairs(M.resolve(opt)) do
    if type(lhs) == 'string' and lhs ~= '' then
      local a = M.actions[action]
      vim.keymap.set('n', lhs, a[1], { buffer = bufnr, silent = true, desc = a[2] })
    end
  end
end

return M
