-- Issue 43: "Recompile and profile" applied from Neovim on a CPU dump of a JAX program
-- outside the repository (slow: JAX runs). HLO_TEST_DUMP is jit_mlp's CPU
-- after-optimizations file of a dump made by `hlo-lsp dump --platform cpu` (its recipe
-- confirmed in HLO_LSP_STATE_DIR, no profile). The action is applied as a user does:
-- 0.11+ vim.lsp.buf.code_action({ filter, apply = true }), 0.7 the code action map and
-- its menu. The report says what was profiled and a profile run appears beside the
-- dump (its events are checked by test_nvim.py).
local H = dofile(vim.g.hlo_test_dir .. '/helpers.lua')
local api = vim.api
local hlo = require('hlo_lsp')

local TITLE = 'Recompile and profile'
local notes = {}

H.run(function()
  H.capture_notes(notes)
  hlo.setup({ cmd = vim.g.hlo_test_cmd, cmd_cwd = vim.g.hlo_test_repo })
  vim.o.autoread = true
  local dump_dir = vim.fn.fnamemodify(vim.env.HLO_TEST_DUMP, ':p:h')
  vim.cmd('silent edit ' .. vim.fn.fnameescape(vim.env.HLO_TEST_DUMP))
  local b = api.nvim_get_current_buf()
  H.wait_attached(b)
  H.eq(vim.fn.glob(dump_dir .. '/profile/plugins/profile/*', false, true), {}, 'no profile yet')
  api.nvim_win_set_cursor(0, { 1, 0 })

  local offered = H.apply_code_action(b, TITLE)
  local report = H.wait_note(notes, { 'Recompiled on', 'No code actions', 'Cannot recompile', 'failed' }, 300000)
  H.check(report ~= nil, 'the action shows a report',
    'offered: ' .. vim.inspect(offered) .. '\n' .. table.concat(notes, '\n---\n'))
  report = report or ''
  H.contains(report, 'Recompiled on CPU', 'the report says where it ran')
  H.contains(report, 'Profiled 3 calls (jit_mlp x3) on CPU', 'the report says what was profiled')
  local reply = hlo.last_recompile
  H.check(type(reply) == 'table' and type(reply.profileRun) == 'string', "the reply's profileRun",
    vim.inspect(reply))
  local runs = vim.fn.glob(dump_dir .. '/profile/plugins/profile/*', false, true)
  H.eq(#runs, 1, 'one profile run beside the dump')
  if runs[1] then
    H.eq(#vim.fn.glob(runs[1] .. '/*.trace.json.gz', false, true), 1, 'with its trace')
  end
end, 360000)
