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
local compat = require('hlo_lsp.compat')

local TITLE = 'Recompile and profile'
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
  H.eq(vim.fn.glob(dump_dir .. '/profile/plugins/profile/*', false, true), {}, 'no profile yet')
  api.nvim_win_set_cursor(0, { 1, 0 })

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
  vim.wait(300000, function()
    for _, n in ipairs(notes) do
      if n:find('Recompiled on', 1, true) or n:find('No code actions', 1, true) or n:find('Cannot recompile', 1, true) or n:find('failed', 1, true) then
        report = n
      end
    end
    return report ~= nil
  end, 200)
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
