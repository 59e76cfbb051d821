-- Measured times in Neovim (issue 43), with the real server, on a real profiled dump
-- (tests/profiled.py: XLA's dump of a JAX program and two runs of jax.profiler.trace
-- in <dump>/prof, the newest measuring more steps). Environment (test_nvim.py):
-- HLO_TEST_DUMP (the after-optimizations file), HLO_TEST_RUNS (<dump>/prof),
-- HLO_TEST_OLDER / HLO_TEST_NEWER (the run directories), HLO_TEST_OP (an instruction
-- both measure), HLO_TEST_OLDER_COUNT / HLO_TEST_NEWER_COUNT (its count in each
-- run's trace, read by the test), HLO_TEST_EMPTY (a directory with no profile).
-- (HLO_TEST_HOVER_ONLY=1: only the first step, on examples/cpu_profiled.)
-- K shows the Measured line of the newest run beside the dump; :HloProfile <dir>
-- offers the runs newest first and loads the one picked (the server's message shown,
-- the hover's count that run's); :HloProfile on a directory without a profile says so.
local H = dofile(vim.g.hlo_test_dir .. '/helpers.lua')
local api = vim.api
local hlo = require('hlo_lsp')

local TIMEOUT = 30000
local op = vim.env.HLO_TEST_OP
local notes = {}

--- K on the instruction until its hover has `needle` (a profile is read in the
--- background: the first hover may come before it); the last hover text.
local function hover_until(b, needle)
  local row, col = H.find(b, '%' .. op .. ' =')
  api.nvim_win_set_cursor(0, { row + 1, col + 2 })
  local text = H.hover_until(needle, TIMEOUT)
  return text or ''
end

--- The server's messages shown since `since` (window/showMessage: text and type).
local function notes_since(since)
  local out = {}
  for i = since + 1, #notes do
    table.insert(out, notes[i])
  end
  return out
end

H.run(function()
  H.log(vim.split(vim.fn.execute('version'), '\n', { trimempty = true })[1])
  -- The server's messages as Neovim shows them (its own window/showMessage handler).
  local show = vim.lsp.handlers['window/showMessage']
  vim.lsp.handlers['window/showMessage'] = function(err, result, ctx, config)
    table.insert(notes, { msg = tostring(result and result.message), level = result and result.type })
    return show(err, result, ctx, config)
  end
  hlo.setup({ cmd = vim.g.hlo_test_cmd, cmd_cwd = vim.g.hlo_test_repo })
  vim.o.columns = 160
  vim.cmd('silent edit ' .. vim.fn.fnameescape(vim.env.HLO_TEST_DUMP))
  local b = api.nvim_get_current_buf()
  H.wait_attached(b, TIMEOUT)

  -- 1. Beside the dump, by default: the newest run.
  local newer = vim.env.HLO_TEST_NEWER_COUNT .. ' runs'
  local text = hover_until(b, newer)
  H.contains(text, 'Measured', 'K on %' .. op .. ' shows the Measured line')
  H.contains(text, newer, 'the count of the newest run beside the dump (' .. newer .. ')')

  if vim.env.HLO_TEST_HOVER_ONLY == '1' then
    return -- the bundled example (one run): the hover only
  end

  -- 2. :HloProfile <dir>: the runs offered newest first, the older one picked.
  local offered, shown = nil, nil
  vim.ui.select = function(items, opts, on_choice)
    offered = items
    shown = {}
    for _, item in ipairs(items) do
      table.insert(shown, opts.format_item(item))
    end
    on_choice(items[2], 2)
  end
  local since = #notes
  vim.cmd('HloProfile ' .. vim.fn.fnameescape(vim.env.HLO_TEST_RUNS))
  H.check(vim.wait(TIMEOUT, function()
    return #notes_since(since) > 0 and require('hlo_lsp.profile').last_load ~= nil
  end, 50), ':HloProfile shows a message')
  H.eq(offered and #offered, 2, 'two runs offered')
  H.eq(offered and offered[1].path, vim.env.HLO_TEST_NEWER, 'the newest first')
  H.check(shown ~= nil and shown[1]:find('newest', 1, true) ~= nil, 'the first is labelled newest', vim.inspect(shown))
  local load = require('hlo_lsp.profile').last_load or {}
  H.eq(load.run, vim.env.HLO_TEST_OLDER, 'the run picked is loaded')
  local said = notes_since(since)[1] or {}
  H.eq(said.level, vim.lsp.protocol.MessageType.Info, 'an info message')
  H.contains(said.msg, vim.fn.fnamemodify(vim.env.HLO_TEST_OLDER, ':t'), 'the message names the run')
  local older = vim.env.HLO_TEST_OLDER_COUNT .. ' runs'
  text = hover_until(b, older)
  H.contains(text, older, 'the hover now has the count of the run picked (' .. older .. ')')
  H.contains(text, 'Measured', 'and the Measured line')

  -- 3. A directory holding no profile: the message says so.
  since = #notes
  require('hlo_lsp.profile').last_load = nil
  offered = nil
  vim.cmd('HloProfile ' .. vim.fn.fnameescape(vim.env.HLO_TEST_EMPTY))
  H.check(vim.wait(TIMEOUT, function()
    return require('hlo_lsp.profile').last_load ~= nil
  end, 50), ':HloProfile on an empty directory answers')
  H.eq(offered, nil, 'nothing to choose from')
  load = require('hlo_lsp.profile').last_load or {}
  H.eq(load.run, nil, 'no run loaded')
  said = notes_since(since)[1] or {}
  H.eq(said.level, vim.lsp.protocol.MessageType.Warning, 'a warning')
  H.contains(said.msg, 'No profile', 'the message says there is no profile')
  H.contains(said.msg, vim.env.HLO_TEST_EMPTY, 'and names the directory')
end, 140000)
