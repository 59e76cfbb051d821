-- :checkhealth hlo_lsp
local M = {}

local function reporter()
  local h = vim.health
  if h and h.start then
    return h.start, h.ok, h.warn, h.error, h.info
  end
  if h and h.report_start then
    return h.report_start, h.report_ok, h.report_warn, h.report_error, h.report_info
  end
  local legacy = require('health') -- Neovim 0.7
  return legacy.report_start, legacy.report_ok, legacy.report_warn, legacy.report_error, legacy.report_info
end

function M.check()
  local start, ok, warn, error, info = reporter()
  local hlo = require('hlo_lsp')
  local compat = require('hlo_lsp.compat')

  start('hlo-lsp: Neovim')
  local v = vim.version()
  local version = string.format('%d.%d.%d', v.major, v.minor, v.patch)
  if vim.fn.has('nvim-0.7') == 1 then
    ok('Neovim ' .. version)
  else
    error('Neovim ' .. version .. ' is too old: 0.7 or newer is needed')
  end
  if not hlo.is_setup() then
    warn("require('hlo_lsp').setup() has not been called", { "Add require('hlo_lsp').setup({}) to your config" })
  else
    info('client start: ' .. tostring(hlo.mode))
  end

  start('hlo-lsp: server command')
  local cmd = hlo.config.cmd
  if type(cmd) == 'string' then
    cmd = { cmd }
  end
  if type(cmd) ~= 'table' or cmd[1] == nil then
    info('cmd is a function or empty; not checked')
  elseif vim.fn.executable(cmd[1]) == 1 then
    ok(table.concat(cmd, ' ') .. ' (' .. vim.fn.exepath(cmd[1]) .. ')')
  else
    error(cmd[1] .. ' is not executable', {
      'pip install the hlo-lsp package (provides the hlo-lsp console script)',
      "or set cmd = { 'python', '-m', 'hlo_lsp' } in setup()",
    })
  end

  start('hlo-lsp: filetype and clients')
  local ft_ok = vim.fn.has('nvim-0.8') == 0 -- 0.7: filetype.vim autocmds, not queryable
    or (vim.filetype and vim.filetype.match and vim.filetype.match({ filename = 'x.hlo' }) == 'hlo')
  if ft_ok then
    ok('*.hlo files are detected as hlo')
  else
    warn('*.hlo is not detected as hlo: is editors/nvim on the runtimepath?')
  end
  local clients = compat.get_clients({ name = hlo.name })
  if #clients == 0 then
    info('no hlo-lsp client running (open an HLO file)')
  end
  for _, client in ipairs(clients) do
    ok(string.format('client %d, root %s', client.id, tostring(client.config and client.config.root_dir)))
  end
  local inline = require('hlo_lsp.inline')
  info('metadata ' .. (inline.is_hidden() and 'hidden' or 'shown') .. '; kinds: ' .. table.concat(inline.enabled_kinds(), ', '))
end

return M
