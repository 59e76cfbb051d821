-- The kernels XLA:GPU generated, in a dump directory: each module's PTX
-- (`module_0001.jit_f.7.ptx`) and LLVM IR (`module_0001.jit_f.7.ir-with-opt.ll`, ...).
-- The hlo-lsp client attaches to these buffers so that `gd` on a kernel's
-- `.entry` / `define` line goes to its HLO instruction and hover names it
-- (docs/protocol.md). They stay what they are: their own filetype and syntax
-- (ptx, llvm), and none of an HLO buffer's extras (inline metadata, folding,
-- semantic tokens, the other maps). The server answers nothing else for them.
local M = {}

--- Autocmd patterns of the candidates; M.is_kernel_file decides.
M.patterns = { '*.ptx', '*.ll' }

local LL_SUFFIXES = { '%.ir%-with%-opt%.ll$', '%.ir%-no%-opt%.ll$', '%.ir%-with%-opt%-noconst%.ll$',
  '%.ir%-no%-opt%-noconst%.ll$' }

--- Whether `path` names a PTX or LLVM IR file XLA writes for a module in a dump:
--- `[timestamp.]module_NNNN.<name>.<K or constants>.ptx` (or `.ir-with-opt.ll`,
--- `.ir-no-opt.ll`, their `-noconst` forms), as hlo_lsp/dump/kernels.py's
--- is_kernel_file says. Other `.ptx` and `.ll` files are left alone.
function M.is_kernel_file(path)
  local tail = ((path or ''):gsub('\\', '/')):match('[^/]*$')
  local stem = tail:match('^(.+)%.ptx$')
  for _, suffix in ipairs(LL_SUFFIXES) do
    stem = stem or (tail:find(suffix) and tail:gsub(suffix, ''))
  end
  if type(stem) ~= 'string' then
    return false
  end
  local prefix = stem:match('^(.+)%.%d+$') or stem:match('^(.+)%.constants$')
  return prefix ~= nil and (prefix:match('^module_%d+%..') ~= nil or prefix:match('^%d+%.module_%d+%..') ~= nil)
end

--- Whether `bufnr` is a loaded file buffer of a kernel file.
function M.is_kernel_buffer(bufnr)
  return vim.api.nvim_buf_is_valid(bufnr)
    and vim.api.nvim_buf_is_loaded(bufnr)
    and vim.bo[bufnr].buftype == ''
    and M.is_kernel_file(vim.api.nvim_buf_get_name(bufnr))
end

--- What the plugin does when its client attaches to a kernel buffer: the
--- definition and hover maps of `keymaps_opt` (keymaps.lua) only; no
--- semantic tokens (the server has none for it; Neovim may start them after
--- on_attach, hence scheduled).
function M.attach(bufnr, client, keymaps_opt)
  local keymaps = require('hlo_lsp.keymaps')
  local maps = keymaps.resolve(keymaps_opt)
  keymaps.attach(bufnr, { hover = maps.hover or false, definition = maps.definition or false,
    references = false, code_action = false })
  if vim.lsp.semantic_tokens and vim.lsp.semantic_tokens.stop then
    vim.schedule(function()
      pcall(vim.lsp.semantic_tokens.stop, bufnr, client.id)
    end)
  end
end

--- Attach `start(bufnr)` to every kernel buffer read, created or entered from
--- now on (in `group`), and to those already open.
function M.register(group, start, attached)
  vim.api.nvim_create_autocmd({ 'BufReadPost', 'BufNewFile', 'BufEnter' }, {
    group = group,
    pattern = M.patterns,
    callback = function(args)
      if M.is_kernel_buffer(args.buf) and not attached(args.buf) then
        start(args.buf)
      end
    end,
  })
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if M.is_kernel_buffer(bufnr) and not attached(bufnr) then
      start(bufnr)
    end
  end
end

return M
