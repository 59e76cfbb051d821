-- Issue 40: "Compile for H100 here, no GPU needed" applied from Neovim on a CPU dump
-- (slow: JAX compiles for an H100 without one; needs jax[cuda12]). HLO_TEST_DUMP is
-- jit_mlp's CPU after-optimizations file of a dump made by `hlo-lsp dump` (with its
-- recipe, confirmed in HLO_LSP_STATE_DIR). The cursor is on a computation's closing
-- `}` (where Neovim said "No code actions available"); the action is applied as a user
-- does: 0.11+ vim.lsp.buf.code_action({ filter, apply = true }), 0.7 the code action
-- map and its menu. The report names H100 and an sm_9.0a after-optimizations file
-- appears in the dump directory.
local H = dofile(vim.g.hlo_test_dir .. '/helpers.lua')
local api = vim.api
local hlo = require('hlo_lsp')

local TITLE = 'Compile for H100 here, no GPU needed'
local notes = {}

H.run(function()
  H.capture_notes(notes)
  hlo.setup({ cmd = vim.g.hlo_test_cmd, cmd_cwd = vim.g.hlo_test_repo })
  vim.o.autoread = true
  local dump_dir = vim.fn.fnamemodify(vim.env.HLO_TEST_DUMP, ':p:h')
  vim.cmd('silent edit ' .. vim.fn.fnameescape(vim.env.HLO_TEST_DUMP))
  local b = api.nvim_get_current_buf()
  H.wait_attached(b)
  H.eq(vim.fn.glob(dump_dir .. '/*sm_9.0a_gpu_after_optimizations.txt', false, true), {}, 'no H100 dump yet')
  local row
  for i, line in ipairs(api.nvim_buf_get_lines(b, 0, -1, false)) do
    if line == '}' and row == nil then
      row = i
    end
  end
  H.check(row ~= nil, "a computation's closing }")
  api.nvim_win_set_cursor(0, { row or 1, 0 })

  local offered = H.apply_code_action(b, TITLE)
  local report = H.wait_note(notes, { 'Recompiled on', 'No code actions', 'Cannot recompile' }, 400000)
  H.check(report ~= nil, 'the action shows a report',
    'offered: ' .. vim.inspect(offered) .. '\n' .. table.concat(notes, '\n---\n'))
  report = report or ''
  H.contains(report, 'Recompiled on H100 without a GPU', 'the report says H100')
  H.eq(type(hlo.last_recompile) == 'table' and hlo.last_recompile.target, 'h100', "the reply's target")
  local written = vim.fn.glob(dump_dir .. '/*.jit_mlp.sm_9.0a_gpu_after_optimizations.txt', false, true)
  H.eq(#written, 1, 'an sm_9.0a after-optimizations dump of jit_mlp is on disk')
  if written[1] then
    H.contains(table.concat(vim.fn.readfile(written[1]), '\n'), 'ENTRY', 'it is an HLO module')
  end
end, 480000)
