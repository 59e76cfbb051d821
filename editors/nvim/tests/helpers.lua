-- Tiny assertion helpers for the headless Neovim tests. Output goes to stdout;
-- the run ends with `N passed, N failed` and exit code 1 on any failure.
local H = {}

H.passed = 0
H.failed = {}

function H.log(msg)
  io.stdout:write(msg .. '\n')
  io.stdout:flush()
end

function H.check(cond, name, detail)
  if cond then
    H.passed = H.passed + 1
    H.log('ok   - ' .. name)
  else
    table.insert(H.failed, name)
    H.log('FAIL - ' .. name .. (detail ~= nil and (': ' .. tostring(detail)) or ''))
  end
  return cond
end

function H.eq(actual, expected, name)
  local same = vim.deep_equal(actual, expected)
  return H.check(same, name, not same and ('expected ' .. vim.inspect(expected) .. ', got ' .. vim.inspect(actual)) or nil)
end

function H.contains(haystack, needle, name)
  local ok = type(haystack) == 'string' and haystack:find(needle, 1, true) ~= nil
  return H.check(ok, name, not ok and ('no ' .. vim.inspect(needle) .. ' in ' .. vim.inspect(haystack)) or nil)
end

function H.finish()
  H.log(string.format('%d passed, %d failed', H.passed, #H.failed))
  if #H.failed > 0 then
    H.log('failed: ' .. table.concat(H.failed, '; '))
    vim.cmd('cquit 1')
  else
    vim.cmd('qall!')
  end
end

--- Run `fn`, report an error as a failure, then quit with the right code.
--- A watchdog fails the run after `timeout_ms`.
function H.run(fn, timeout_ms)
  local timer = (vim.uv or vim.loop).new_timer()
  timer:start(timeout_ms or 55000, 0, vim.schedule_wrap(function()
    H.log('FAIL - watchdog: the test did not finish in time')
    table.insert(H.failed, 'watchdog')
    H.finish()
  end))
  local ok, err = xpcall(fn, debug.traceback)
  if not ok then
    table.insert(H.failed, 'error')
    H.log('FAIL - error: ' .. tostring(err))
  end
  H.finish()
end

--- 0-based (row, col) of the first line containing `needle` (plain), col of the match.
function H.find(bufnr, needle, start_row)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  for i = (start_row or 0) + 1, #lines do
    local s = lines[i]:find(needle, 1, true)
    if s then
      return i - 1, s - 1
    end
  end
  return nil, nil
end

--- Text shown on screen row `row` (1-based), `ncols` cells.
function H.screen_line(row, ncols)
  vim.cmd('redraw!')
  local out = {}
  for c = 1, ncols or vim.o.columns do
    table.insert(out, vim.fn.screenstring(row, c))
  end
  return table.concat(out)
end

function H.tmpdir()
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, 'p')
  return dir
end

function H.write(path, lines)
  vim.fn.writefile(lines, path)
  return path
end

function H.read_bytes(path)
  local f = io.open(path, 'rb')
  if not f then
    return nil
  end
  local data = f:read('*a')
  f:close()
  return data
end

--- The example dump (examples/gpu), or the shared corpus copy.
function H.example_dump()
  local name = 'jit_matmul_fn.fp8_cublaslt.sm90_gpu_after_optimizations.txt'
  local candidates = {
    vim.g.hlo_test_repo .. '/examples/gpu/' .. name,
    '/work/shared/corpus/gpu-from-seeds/' .. name,
  }
  for _, p in ipairs(candidates) do
    if vim.fn.filereadable(p) == 1 then
      return p
    end
  end
  error('example dump not found: ' .. table.concat(candidates, ', '))
end

-- What a user does in the editor, the same way in every test.

--- Type `keys` as the user would (mappings apply).
function H.feed(keys)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), 'mx', false)
end

--- The text of the first floating window (a hover), nil when none is open.
function H.float_text()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= '' then
      return table.concat(vim.api.nvim_buf_get_lines(vim.api.nvim_win_get_buf(win), 0, -1, false), '\n')
    end
  end
  return nil
end

--- Close every floating window.
function H.close_floats()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_config(win).relative ~= '' then
      vim.api.nvim_win_close(win, true)
    end
  end
end

--- Every message given to vim.notify from now on, in order (each still shown),
--- appended to `notes` (default a new list) as they come; returns the list.
function H.capture_notes(notes)
  notes = notes or {}
  local notify = vim.notify
  vim.notify = function(msg, level, ...)
    table.insert(notes, tostring(msg))
    return notify(msg, level, ...)
  end
  return notes
end

--- The start of most editor tests: Neovim's version logged, the plugin set up with the
--- test's server (test_nvim.py's cmd and cwd), the screen `columns` wide (default 160), the
--- HLO file `path` opened and the server attached (checked, `timeout` ms at most, as
--- H.wait_attached). Returns its buffer.
function H.open_with_server(path, columns, timeout)
  H.log(vim.split(vim.fn.execute('version'), '\n', { trimempty = true })[1])
  require('hlo_lsp').setup({ cmd = vim.g.hlo_test_cmd, cmd_cwd = vim.g.hlo_test_repo })
  vim.o.columns = columns or 160
  vim.cmd('silent edit ' .. vim.fn.fnameescape(path))
  local b = vim.api.nvim_get_current_buf()
  H.eq(vim.bo[b].filetype, 'hlo', 'filetype hlo')
  H.wait_attached(b, timeout)
  return b
end

--- Whether the paths `a` and `b` name the same file (symlinks resolved).
function H.same_file(a, b)
  return vim.loop.fs_realpath(a) == vim.loop.fs_realpath(b)
end

--- Wait until hlo-lsp's client is attached to buffer `b` with the server's
--- capabilities (a check of its own), `timeout` ms at most (default 30 s).
function H.wait_attached(b, timeout)
  local hlo = require('hlo_lsp')
  return H.check(vim.wait(timeout or 30000, function()
    local c = hlo.get_client(b)
    return c ~= nil and c.server_capabilities ~= nil
  end, 50), 'client attached')
end

--- Apply the code action `title` (a string, or a function of a title saying
--- whether it is the one) at the cursor of buffer `b` as a user does: 0.11+
--- vim.lsp.buf.code_action({ filter, apply = true }), before that the plugin's
--- code action map (<leader>ca) and a pick in its menu (vim.ui.select). With
--- `opts.map`, the map on every version (gra on 0.11+). Returns the titles
--- offered (they fill as the menu is built).
function H.apply_code_action(b, title, opts)
  local hlo = require('hlo_lsp')
  local wanted = type(title) == 'function' and title or function(t) return t == title end
  local offered = {}
  if require('hlo_lsp.compat').nvim_0_11 and not (opts and opts.map) then
    vim.lsp.buf.code_action({
      filter = function(action)
        table.insert(offered, action.title)
        return wanted(action.title)
      end,
      apply = true,
    })
    return offered
  end
  vim.ui.select = function(items, _, on_choice)
    for i, item in ipairs(items) do
      local action = item.action or item[2] or item
      local t = type(action) == 'table' and action.title or tostring(action)
      table.insert(offered, t)
      if wanted(t) then
        return on_choice(item, i)
      end
    end
    on_choice(nil, nil)
  end
  vim.g.mapleader = ' '
  require('hlo_lsp.keymaps').attach(b, hlo.config.keymaps) -- after mapleader changed
  H.feed(require('hlo_lsp.compat').nvim_0_11 and 'gra' or ' ca')
  return offered
end

--- The last of `notes` (from H.capture_notes) after the first `from` that holds
--- one of the plain strings `needles`, waiting `timeout` ms at most; nil when
--- none came.
function H.wait_note(notes, needles, timeout, from)
  local found
  vim.wait(timeout, function()
    for i = (from or 0) + 1, #notes do
      for _, needle in ipairs(needles) do
        if notes[i]:find(needle, 1, true) then
          found = notes[i]
        end
      end
    end
    return found ~= nil
  end, 200)
  return found
end

--- K at the cursor until the hover holds the plain string `needle` (an input
--- read in the background may come after the first hover), `timeout` ms at
--- most; the last hover's text ('' when none), its window closed. `before`, when
--- given, runs before each K (to put the cursor back).
function H.hover_until(needle, timeout, before)
  local text
  vim.wait(timeout, function()
    H.close_floats()
    if before then
      before()
    end
    H.feed('K')
    vim.wait(3000, function()
      text = H.float_text()
      return text ~= nil
    end, 20)
    return text ~= nil and text:find(needle, 1, true) ~= nil
  end, 200)
  H.close_floats()
  return text or ''
end

return H
