-- Minimal init for the headless Neovim tests (and for trying the plugin by hand):
--   nvim -u editors/nvim/tests/minimal_init.lua some_dump.txt
-- Environment:
--   HLO_LSP_CMD    server command, split on whitespace (default: python -m hlo_lsp)
--   HLO_TEST_SETUP 0: do not call require('hlo_lsp').setup() here
--   HLO_LSP_MODE   force 'config' | 'start' | 'start_client' (testing the older paths)
local this = debug.getinfo(1, 'S').source:sub(2)
local tests_dir = vim.fn.fnamemodify(this, ':p:h')
local repo = vim.fn.fnamemodify(tests_dir, ':h:h:h')

vim.g.hlo_test_repo = repo
vim.g.hlo_test_dir = tests_dir

vim.opt.runtimepath:prepend(repo .. '/editors/nvim')
vim.opt.swapfile = false
vim.opt.shadafile = 'NONE'
vim.opt.more = false
vim.opt.shortmess:append('I')

if #vim.api.nvim_list_uis() == 0 then
  -- Headless: one message per line on stderr instead of run-together echoes.
  vim.notify = function(msg, level)
    io.stderr:write(string.format('[notify %s] %s\n', tostring(level or ''), tostring(msg)))
  end
end

local cmd = { 'python', '-m', 'hlo_lsp' }
if vim.env.HLO_LSP_CMD and vim.env.HLO_LSP_CMD ~= '' then
  cmd = vim.fn.split(vim.env.HLO_LSP_CMD)
end
vim.g.hlo_test_cmd = cmd

if vim.env.HLO_TEST_SETUP ~= '0' then
  local mode = vim.env.HLO_LSP_MODE
  require('hlo_lsp').setup({
    cmd = cmd,
    -- `python -m hlo_lsp` must find the package when it is not installed.
    cmd_cwd = repo,
    _mode = (mode ~= nil and mode ~= '') and mode or nil,
  })
end
