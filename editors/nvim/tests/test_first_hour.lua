-- A user's first hour in Neovim, with the real server, on a dump directory
-- outside any git repository whose program lives two levels up:
--   <tmp>/proj/make_dump.py, <tmp>/proj/runs/dump/module_*.txt (relative paths).
-- Environment (set by test_nvim.py): HLO_TEST_DUMP (the dump file),
-- HLO_TEST_PROGRAM (the Python file), HLO_TEST_FRAME_ROW / HLO_TEST_FRAME_LINE
-- (0-based dump row with a stack_frame_id=, 1-based line of its innermost frame).
-- Checks the default maps of this Neovim version (definition from
-- stack_frame_id= lands in the program; hover; references), iskeyword, `zc`
-- on a computation, nowrap while metadata is hidden, and the hlo.recompile
-- reply read through the plugin (the contract of hlo_lsp/lsp/messages.py).
local H = dofile(vim.g.hlo_test_dir .. '/helpers.lua')
local api = vim.api
local hlo = require('hlo_lsp')
local inline = require('hlo_lsp.inline')
local compat = require('hlo_lsp.compat')

local TIMEOUT = 20000
local dump = vim.env.HLO_TEST_DUMP
local program = vim.env.HLO_TEST_PROGRAM
local frame_row = tonumber(vim.env.HLO_TEST_FRAME_ROW)
local frame_line = tonumber(vim.env.HLO_TEST_FRAME_LINE)
local notes = {}

local function float_text()
  for _, win in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_config(win).relative ~= '' then
      local b = api.nvim_win_get_buf(win)
      return table.concat(api.nvim_buf_get_lines(b, 0, -1, false), '\n'), win
    end
  end
  return nil
end

H.run(function()
  H.log(vim.split(vim.fn.execute('version'), '\n', { trimempty = true })[1])
  local notify = vim.notify
  vim.notify = function(msg, level)
    table.insert(notes, { msg = tostring(msg), level = level })
    notify(msg, level)
  end
  vim.g.mapleader = ' '
  hlo.setup({
    cmd = vim.g.hlo_test_cmd,
    cmd_cwd = vim.g.hlo_test_repo,
    settings = { hlo = { recompile = {
      -- The user's own setting runs without confirmation: a program that fails.
      command = { 'python3', '-c', 'import sys; print("boom"); sys.exit(3)' },
      platform = 'cpu',
    } } },
  })
  vim.o.columns = 120
  vim.cmd('silent edit ' .. vim.fn.fnameescape(dump))
  local b = api.nvim_get_current_buf()
  H.eq(vim.bo[b].filetype, 'hlo', 'filetype hlo')
  local attached = vim.wait(TIMEOUT, function()
    local c = hlo.get_client(b)
    return c ~= nil and c.server_capabilities ~= nil
  end, 50)
  H.check(attached, 'client attached')
  local root = hlo.get_client(b).config.root_dir
  H.check(vim.fn.isdirectory(root .. '/.git') == 0, 'no git repository at the root ' .. tostring(root))

  -- Maps of this version's convention.
  local function buffer_map(lhs)
    local m = vim.fn.maparg(lhs, 'n', false, true)
    return type(m) == 'table' and m.buffer == 1
  end
  H.check(buffer_map('gd'), 'gd is a buffer-local map')
  if compat.nvim_0_11 then
    H.check(not buffer_map('gr') and not buffer_map('<leader>ca'),
      '0.11+: no gr / <leader>ca maps of the plugin (Neovim maps grr, gra)')
  else
    H.check(buffer_map('K') and buffer_map('gr') and buffer_map('<leader>ca'),
      'before 0.11: K, gr, <leader>ca are buffer-local maps')
  end

  -- iskeyword: a name with '.' and '-' is one word.
  local row, col = H.find(b, '%fused_computation.9')
  api.nvim_win_set_cursor(0, { row + 1, col + 3 })
  H.eq(vim.fn.expand('<cword>'), 'fused_computation.9', 'iskeyword: <cword> is the whole HLO name')

  -- Hidden metadata: nowrap; shown again: wrap back.
  vim.wait(TIMEOUT, function()
    return inline.regions(b) ~= nil
  end, 20)
  H.eq(vim.wo.wrap, false, 'nowrap while metadata is hidden')
  vim.cmd('HloToggleMetadata show')
  H.eq(vim.wo.wrap, true, "'wrap' restored when metadata is shown")
  vim.cmd('HloToggleMetadata hide')
  H.eq(vim.wo.wrap, false, 'nowrap again when hidden')

  -- Folding: zc closes the computation under the cursor.
  H.check(vim.wo.foldmethod == 'expr', "'foldmethod' is expr")
  api.nvim_win_set_cursor(0, { row + 3, 0 })
  local folded = vim.wait(TIMEOUT, function()
    pcall(vim.cmd, 'normal! zx')
    local ok = pcall(vim.cmd, 'normal! zc')
    return ok and vim.fn.foldclosed('.') ~= -1
  end, 100)
  H.check(folded, 'zc folds the computation', 'foldlevel ' .. vim.fn.foldlevel('.'))
  H.eq(vim.fn.foldclosed('.'), row + 1, 'the fold starts at the computation header')
  pcall(vim.cmd, 'normal! zR')

  -- Hover with the default map (K: Neovim's own on 0.11, the plugin's before).
  local grow, gcol = H.find(b, '%broadcast_multiply_fusion.3 =')
  api.nvim_win_set_cursor(0, { grow + 1, gcol + 2 })
  H.feed('K')
  local text
  vim.wait(TIMEOUT, function()
    text = float_text()
    return text ~= nil
  end, 20)
  H.contains(text, 'broadcast_multiply_fusion.3', 'K shows the hover of the instruction')
  H.check(text ~= nil and not text:find('(control flow)', 1, true), 'a fusion is not labelled control flow')
  for _, win in ipairs(api.nvim_list_wins()) do
    if api.nvim_win_get_config(win).relative ~= '' then
      api.nvim_win_close(win, true)
    end
  end

  -- References with the default map (grr on 0.11+, gr before).
  vim.fn.setqflist({})
  local crow, ccol = H.find(b, '%fused_computation.9 (')
  api.nvim_win_set_cursor(0, { crow + 1, ccol + 2 })
  H.feed(compat.nvim_0_11 and 'grr' or 'gr')
  local got_refs = vim.wait(TIMEOUT, function()
    return #vim.fn.getqflist() >= 2
  end, 20)
  H.check(got_refs, 'references map fills the quickfix list', #vim.fn.getqflist())
  pcall(vim.cmd, 'cclose')
  if api.nvim_get_current_buf() ~= b then
    vim.cmd('buffer ' .. b)
  end

  -- Definition from stack_frame_id= (gd): the program two levels up, right line.
  local line = api.nvim_buf_get_lines(b, frame_row, frame_row + 1, false)[1]
  local sf = line:find('stack_frame_id=', 1, true)
  H.check(sf ~= nil, 'the frame row has a stack_frame_id=')
  vim.cmd('HloToggleMetadata show')
  api.nvim_win_set_cursor(0, { frame_row + 1, sf + 2 })
  H.feed('gd')
  local landed = vim.wait(TIMEOUT, function()
    return api.nvim_buf_get_name(0) == program
  end, 20)
  H.check(landed, 'gd on stack_frame_id= opens ' .. program, api.nvim_buf_get_name(0))
  H.eq(api.nvim_win_get_cursor(0)[1], frame_line, 'gd lands on the line of the frame')
  H.check(api.nvim_buf_line_count(0) > 1, 'the Python buffer is not empty')
  vim.cmd('buffer ' .. b)
  vim.cmd('HloToggleMetadata hide')

  -- The recompile reply through the plugin: every field the plugin reads is in
  -- the real server's reply; the report is shown line by line.
  notes = {}
  local reply
  hlo.recompile(b, function(err, result)
    reply = err and { err = err } or result
  end)
  vim.wait(60000, function()
    return reply ~= nil and #notes > 0
  end, 50)
  H.check(reply ~= nil and reply.err == nil, 'hlo.recompile answered', vim.inspect(reply))
  for _, field in ipairs(hlo.RECOMPILE_FIELDS) do
    H.check(type(reply) == 'table' and reply[field] ~= nil, 'the reply has the field ' .. field .. ' the plugin reads')
  end
  H.eq(reply and reply.ok, false, 'the failing program: ok is false')
  local shown = ''
  for _, n in ipairs(notes) do
    if n.msg:find('recompile', 1, true) then
      shown = n.msg
    end
  end
  H.check(shown:find('\n', 1, true) ~= nil and not shown:find('stderrTail', 1, true),
    'the report is several lines, not the reply table', shown)
  H.contains(shown, reply and reply.summary or '?', 'the report is the reply summary')
end, 110000)
