-- Recompile from Neovim with the real server and JAX on the CPU (slow):
-- HLO_TEST_DUMP is jit_mlp's after-optimizations file of a dump made by
-- `hlo-lsp dump` (with its recipe); HLO_TEST_PROGRAM the program. The test
-- widens the hidden layer and runs :HloRecompile, then adds a tanh and runs the
-- code action; each time the report (the reply's summary, several lines) names
-- the changed instructions and the buffer shows the new dump.
local H = dofile(vim.g.hlo_test_dir .. '/helpers.lua')
local api = vim.api
local hlo = require('hlo_lsp')

local notes = {}
local program = vim.env.HLO_TEST_PROGRAM

local function edit_program(from, to)
  local lines = vim.fn.readfile(program)
  for i, l in ipairs(lines) do
    lines[i] = l:gsub(vim.pesc(from), to)
  end
  vim.fn.writefile(lines, program)
end

local function wait_report(since)
  return H.wait_note(notes, { 'Recompiled on' }, 170000, since)
end

local function buffer_has(b, needle)
  return table.concat(api.nvim_buf_get_lines(b, 0, -1, false), '\n'):find(needle, 1, true) ~= nil
end

H.run(function()
  H.capture_notes(notes)
  hlo.setup({ cmd = vim.g.hlo_test_cmd, cmd_cwd = vim.g.hlo_test_repo })
  vim.o.autoread = true
  vim.cmd('silent edit ' .. vim.fn.fnameescape(vim.env.HLO_TEST_DUMP))
  local b = api.nvim_get_current_buf()
  H.wait_attached(b)
  H.check(buffer_has(b, 'f32[32,128]'), 'the dump has the 128-wide layer')

  -- 1. :HloRecompile after a layer size change.
  edit_program('HIDDEN = 128', 'HIDDEN = 256')
  local n = #notes
  vim.cmd('HloRecompile')
  local report = wait_report(n)
  H.check(report ~= nil, ':HloRecompile shows a report', table.concat(notes, '\n---\n'))
  report = report or ''
  H.check(select(2, report:gsub('\n', '')) >= 3, 'the report has several lines', report)
  H.contains(report, 'shape f32[32,128] -> f32[32,256]', 'the report names the changed shape')
  H.contains(report, 'prog.py:', 'the changes are grouped per Python line')
  H.check(vim.wait(10000, function()
    return buffer_has(b, 'f32[32,256]')
  end, 50), 'the buffer shows the new dump after :HloRecompile')

  -- 2. The code action after adding a tanh.
  edit_program('h = jnp.maximum(x @ w1, 0.0)', 'h = jnp.tanh(jnp.maximum(x @ w1, 0.0))')
  n = #notes
  api.nvim_win_set_cursor(0, { 1, 0 })
  -- The user's way: the code action map of this version (gra on 0.11+,
  -- <leader>ca before), picking the recompile action in the menu.
  local offered = H.apply_code_action(b, function(title)
    return title:find('ecompile', 1, true) ~= nil
  end, { map = true })
  report = wait_report(n)
  H.check(report ~= nil, 'the code action shows a report',
    'offered: ' .. vim.inspect(offered) .. '\n' .. table.concat(notes, '\n---\n'))
  H.contains(report or '', 'added %tanh', 'the report names the added tanh')
  H.check(vim.wait(10000, function()
    return buffer_has(b, 'tanh(')
  end, 50), 'the buffer shows the new dump after the code action')
end, 400000)
