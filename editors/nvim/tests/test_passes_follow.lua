-- Issue 44, an open :HloPasses buffer follows its dump directory, with the real server, on a
-- copy of examples/cpu_passes (a real CPU compile dumped with --xla_dump_hlo_pass_re=.*)
-- caught while XLA writes it. Environment (test_nvim.py): HLO_TEST_DUMP (the
-- before-optimizations file), HLO_TEST_HELD (a directory with the files XLA writes after
-- snapshot 0014: the later snapshots and the after-optimizations file, held back).
-- :HloPasses lists the passes so far; the held-back files copied into the dump (as XLA
-- writes them) appear in the buffer with no command, the window and cursor where they were;
-- removed again (a recompile that dumps fewer passes), they vanish from it.
local H = dofile(vim.g.hlo_test_dir .. '/helpers.lua')
local api = vim.api
local uv = vim.uv or vim.loop
local hlo = require('hlo_lsp')

local TIMEOUT = 60000

local function held()
  local names = vim.fn.readdir(vim.env.HLO_TEST_HELD)
  table.sort(names)
  return names
end

H.run(function()
  local b = H.open_with_server(vim.env.HLO_TEST_DUMP, nil, TIMEOUT)
  local dump = vim.fn.fnamemodify(vim.env.HLO_TEST_DUMP, ':h')

  local replied
  hlo.passes(b, function(err, reply) replied = reply or err end)
  H.check(vim.wait(TIMEOUT, function() return replied ~= nil end, 20), ':HloPasses answered')
  local view, win = api.nvim_get_current_buf(), api.nvim_get_current_win()
  H.check(view ~= b, ':HloPasses opens a scratch buffer')
  H.check(H.find(view, 'dot-library-passes: dot-library-rewriter') ~= nil, 'the passes so far')
  H.check(H.find(view, 'after_optimizations') == nil, 'no after-optimizations file yet')
  local cursor = api.nvim_win_get_cursor(win)

  -- XLA writes the rest of its snapshots: the buffer shows them, no command given.
  local names = held()
  H.check(#names >= 2, 'files held back', #names)
  for _, name in ipairs(names) do
    assert(uv.fs_copyfile(vim.env.HLO_TEST_HELD .. '/' .. name, dump .. '/' .. name))
  end
  H.check(vim.wait(TIMEOUT, function()
    return H.find(view, 'HLO_passes_after_layout_assignment: fusion') ~= nil
      and H.find(view, 'after_optimizations') ~= nil
  end, 50), 'the new passes appear in the open :HloPasses buffer',
    table.concat(api.nvim_buf_get_lines(view, 0, -1, false), '\n'))
  H.eq(api.nvim_get_current_win(), win, 'the focus stays')
  H.eq(api.nvim_win_get_buf(win), view, 'the window still shows the timeline')
  H.eq(api.nvim_win_get_cursor(win)[1], cursor[1], 'the cursor stays on its line')
  H.check(not vim.bo[view].modified and not vim.bo[view].modifiable, 'still a read-only scratch buffer')

  -- <CR> on the new row: the diff of the new step (the buffer's rows follow the lines).
  local frow = H.find(view, 'HLO_passes_after_layout_assignment: fusion')
  local tab = api.nvim_get_current_tabpage()
  api.nvim_win_set_cursor(win, { frow + 1, 0 })
  H.feed('<CR>')
  H.check(vim.wait(TIMEOUT, function() return api.nvim_get_current_tabpage() ~= tab end, 20),
    '<CR> on the new row opens its diff')
  local files = {}
  for _, w in ipairs(api.nvim_tabpage_list_wins(0)) do
    table.insert(files, vim.fn.fnamemodify(api.nvim_buf_get_name(api.nvim_win_get_buf(w)), ':t'))
  end
  table.sort(files)
  H.contains(files[2] or '', '.0017.HLO_passes_after_layout_assignment.after_fusion.',
    'the diff of the fusion pass\'s snapshot')
  vim.cmd('tabclose')

  -- A recompile that dumps fewer passes: they vanish from the buffer.
  for _, name in ipairs(names) do
    assert(os.remove(dump .. '/' .. name))
  end
  H.check(vim.wait(TIMEOUT, function()
    return H.find(view, 'after_optimizations') == nil
      and H.find(view, 'dot-library-passes: dot-library-rewriter') ~= nil
  end, 50), 'the removed passes vanish from the buffer',
    table.concat(api.nvim_buf_get_lines(view, 0, -1, false), '\n'))
end, 150000)
