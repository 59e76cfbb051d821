-- Issue 44, :HloBlame says why priority fusion fused the instruction, in Neovim with the
-- real server, on a copy of examples/gpu/deviceless/multi_output_fusion_log (a deviceless
-- H100 dump: XLA:GPU's priority-fusion log and the snapshot after priority-fusion).
-- Environment (test_nvim.py): HLO_TEST_DUMP (the after-optimizations file), HLO_TEST_CREATED
-- (the snapshot after priority-fusion).
-- :HloBlame on %loop_exponential_multiply_fusion (fusion.1 when priority fusion ran) opens
-- the snapshot that created it; the quickfix list (as :copen shows it) lists that pass, then
-- a "priority fusion" head and the log's decisions; the message names the first decision.
local H = dofile(vim.g.hlo_test_dir .. '/helpers.lua')
local api = vim.api
local passes = require('hlo_lsp.passes')

local TIMEOUT = 20000

H.run(function()
  local notes = H.capture_notes()
  local b = H.open_with_server(vim.env.HLO_TEST_DUMP, 200, TIMEOUT)

  -- :HloBlame on the fusion, as the user runs it.
  local row, col = H.find(b, '%loop_exponential_multiply_fusion =')
  api.nvim_win_set_cursor(0, { row + 1, col + 2 })
  passes.last_blame = nil
  vim.cmd('HloBlame')
  H.check(vim.wait(TIMEOUT, function() return passes.last_blame ~= nil end, 20), ':HloBlame answered')
  H.check(vim.wait(TIMEOUT, function()
    return H.same_file(api.nvim_buf_get_name(0), vim.env.HLO_TEST_CREATED)
  end, 20), ':HloBlame opens the snapshot after priority-fusion', api.nvim_buf_get_name(0))

  local qf = vim.fn.getqflist()
  H.eq(#qf, 5, 'created, changed, the priority fusion head and its two decisions')
  H.contains(qf[1].text, 'created by priority-fusion in fusion, snapshot 0027', 'the creating pass')
  H.eq(qf[1].valid, 1, 'the creating pass is a place')
  H.eq(qf[3].text, 'priority fusion (module_0001.jit_stats.priority_fusion_dump.txt), where it is %fusion.1:',
    'the head names the log and the name there')
  H.eq(qf[4].text, '  fused into %reduce_sum.14.0, %fusion: estimated 9.83 µs fused against 8.03 µs unfused',
    'the cost model\'s estimate')
  H.eq(qf[5].text, '  took in %tanh.1.0', 'what it took in')
  H.eq(qf[3].valid, 0, 'the decisions are text, no place')

  -- What the user sees: the quickfix window's lines, and the message.
  vim.cmd('copen')
  local shown = table.concat(api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  vim.cmd('cclose')
  H.contains(shown, 'priority fusion (module_0001.jit_stats.priority_fusion_dump.txt), where it is %fusion.1:',
    ':copen shows the head')
  H.contains(shown, 'took in %tanh.1.0', ':copen shows the decisions')
  local note = H.wait_note(notes, { 'priority fusion' }, TIMEOUT)
  H.contains(note, '%loop_exponential_multiply_fusion: created by priority-fusion', 'the message: the blame')
  H.contains(note, 'priority fusion: fused into %reduce_sum.14.0, %fusion: estimated 9.83 µs',
    'the message: the first decision')
  H.contains(note, '(+1 more in the quickfix list)', 'the message: where the rest is')

  -- An instruction the log does not name: the blame alone.
  vim.cmd('buffer ' .. b)
  row, col = H.find(b, '%input_reduce_fusion =')
  api.nvim_win_set_cursor(0, { row + 1, col + 2 })
  passes.last_blame = nil
  vim.cmd('HloBlame')
  H.check(vim.wait(TIMEOUT, function() return passes.last_blame ~= nil end, 20), ':HloBlame answered again')
  H.check(vim.wait(TIMEOUT, function() return #vim.fn.getqflist() == 2 end, 20),
    'only the passes in the quickfix list', vim.inspect(vim.fn.getqflist()))
end, 90000)
