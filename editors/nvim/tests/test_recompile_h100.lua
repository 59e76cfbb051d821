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
local compat = require('hlo_lsp.compat')

local TITLE = 'Compile for H100 here, no GPU needed'
local notes = {}

H.run(function()
  local notify = vim.notify
  vim.notify = function(msg, level)
    table.insert(notes, tostring(msg))
    notify(msg, level)
  end
  hlo.setup({ cmd = vim.g.hlo_test_cmd, cmd_cwd = vim.g.hlo_test_repo })
  vim.o.autoread = true
  local dump_dir = vim.fn.fnamemodify(vim.env.HLO_TEST_DUMP, ':p:h')
  vim.cmd('silent edit ' .. vim.fn.fnameescape(vim.env.HLO_TEST_DUMP))
  local b = api.nvim_get_current_buf()
  H.check(vim.wait(30000, function()
    local c = hlo.get_client(b)
    return c ~= nil and c.server_capabilities ~= nil
  end, 50), 'client attached')
  H.eq(vim.fn.glob(dump_dir .. '/*sm_9.0a_gpu_after_optimizations.txt', false, true), {}, 'no H100 dump yet')
  local row
  for i, line in ipairs(api.nvim_buf_get_lines(b, 0, -1, false)) do
    if line == '}' and row == nil then
      row = i
    end
  end
  H.check(row ~= nil, "a computation's closing }")
  api.nvim_win_set_cursor(0, { row or 1, 0 })

  local offered = {}
  if compat.nvim_0_11 then
    vim.lsp.buf.code_action({
      filter = function(action)
        table.insert(offered, action.title)
        return action.title == TITLE
      end,
      apply = true,
    })
  else
    -- 0.7 has no filter/apply: the user's map (<leader>ca) and a pick in its menu.
    vim.ui.select = function(items, opts, on_choice)
      for i, item in ipairs(items) do
        local action = item.action or item[2] or item
        local title = type(action) == 'table' and action.title or tostring(action)
        table.insert(offered, title)
        if title == TITLE then
          return on_choice(item, i)
        end
      end
      on_choice(nil, nil)
    end
    vim.g.mapleader = ' '
    require('hlo_lsp.keymaps').attach(b, hlo.config.keymaps) -- after mapleader changed
    api.nvim_feedkeys(api.nvim_replace_termcodes(' ca', true, false, true), 'mx', false)
  end
  local report
  vim.wait(400000, function()
    for _, n in ipairs(notes) do
      if n:find('Recompiled on', 1, true) or n:find('No code actions', 1, true) or n:find('Cannot recompile', 1, true) then
        report = n
      end
    end
    return report ~= nil
  end, 200)
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
