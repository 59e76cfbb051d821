-- Issue 44, the pass history in Neovim, with the real server, on a copy of
-- examples/cpu_passes (a real CPU compile dumped with --xla_dump_hlo_pass_re=.*).
-- Environment (test_nvim.py): HLO_TEST_DUMP (the after-optimizations file),
-- HLO_TEST_BEFORE (the snapshot before dot-library-rewriter's), HLO_TEST_CREATED (the
-- snapshot after it).
-- K on %ynn_fusion says which pass created it; :HloPasses lists the passes and <CR> on
-- dot-library-rewriter's row opens the step's diff in a new tab; :HloBlame on
-- %ynn_fusion opens the snapshot that created it on its name, the quickfix list naming
-- the pass.
local H = dofile(vim.g.hlo_test_dir .. '/helpers.lua')
local api = vim.api
local hlo = require('hlo_lsp')

local TIMEOUT = 20000

H.run(function()
  local b = H.open_with_server(vim.env.HLO_TEST_DUMP, nil, TIMEOUT)

  -- K on %ynn_fusion: the pass that created it.
  local row, col = H.find(b, '%ynn_fusion =')
  local text = H.hover_until('Pass history', TIMEOUT, function()
    api.nvim_win_set_cursor(0, { row + 1, col + 2 })
  end)
  H.contains(text, 'Created by', 'K says which pass created it')
  H.contains(text, 'dot-library-rewriter', 'K names the pass')
  H.contains(text, 'snapshot 0014', 'K names the snapshot')

  -- :HloPasses: the timeline in a scratch buffer.
  local replied
  hlo.passes(b, function(err, reply) replied = reply or err end)
  H.check(vim.wait(TIMEOUT, function() return replied ~= nil end, 20), ':HloPasses answered')
  local view = api.nvim_get_current_buf()
  H.check(view ~= b, ':HloPasses opens a scratch buffer')
  H.eq(vim.bo[view].buftype, 'nofile', 'a scratch buffer')
  local vrow = H.find(view, 'dot-library-passes: dot-library-rewriter')
  H.check(vrow ~= nil, 'the timeline lists dot-library-rewriter')
  local listed = api.nvim_buf_get_lines(view, vrow, vrow + 1, false)[1]
  H.contains(listed, '0014', 'with its snapshot number')
  H.contains(listed, '+fusion __ynn_fusion', 'and what appeared')

  -- <CR> on the row: a new tab with the step's diff.
  local tab = api.nvim_get_current_tabpage()
  api.nvim_win_set_cursor(0, { vrow + 1, 0 })
  H.feed('<CR>')
  H.check(vim.wait(TIMEOUT, function() return api.nvim_get_current_tabpage() ~= tab end, 20),
    '<CR> opens a new tab')
  local wins = api.nvim_tabpage_list_wins(0)
  H.eq(#wins, 2, 'two windows in the diff tab')
  local files = {}
  for _, w in ipairs(wins) do
    H.check(api.nvim_win_get_option(w, 'diff'), 'each window in diff mode')
    table.insert(files, api.nvim_buf_get_name(api.nvim_win_get_buf(w)))
  end
  table.sort(files)
  H.check(H.same_file(files[1], vim.env.HLO_TEST_BEFORE), 'the snapshot before the pass', files[1])
  H.check(H.same_file(files[2], vim.env.HLO_TEST_CREATED), 'the pass\'s snapshot', files[2])

  -- :HloBlame on %ynn_fusion in the dump: its first appearance and the quickfix list.
  vim.cmd('tabfirst')
  vim.cmd('only')
  vim.cmd('buffer ' .. b)
  api.nvim_win_set_cursor(0, { row + 1, col + 2 })
  local blamed
  hlo.blame(b, function(err, reply) blamed = reply or err end)
  H.check(vim.wait(TIMEOUT, function() return blamed ~= nil end, 20), ':HloBlame answered')
  H.check(vim.wait(TIMEOUT, function()
    return H.same_file(api.nvim_buf_get_name(0), vim.env.HLO_TEST_CREATED)
  end, 20), ':HloBlame opens the snapshot that created it', api.nvim_buf_get_name(0))
  local cursor = api.nvim_win_get_cursor(0)
  local line = api.nvim_get_current_line()
  H.check(line:find('^%s*%%ynn_fusion = ') ~= nil, 'on the instruction\'s line', line)
  H.eq(line:sub(cursor[2] + 1, cursor[2] + #'ynn_fusion'), 'ynn_fusion', 'the cursor on its name')
  local qf = vim.fn.getqflist()
  H.eq(#qf, 1, 'one quickfix entry: created, never changed since')
  H.contains(qf[1].text, 'created by dot-library-rewriter in dot-library-passes, snapshot 0014',
    'the quickfix entry names the pass')
  H.eq(qf[1].lnum, cursor[1], 'the quickfix entry is the first appearance')
end, 90000)
