-- Folding from the server's textDocument/foldingRange (one fold per
-- computation, region of metadata...):
--
-- * Neovim 0.11+: 'foldexpr' = vim.lsp.foldexpr(), Neovim's own.
-- * Older: 'foldexpr' = this module's expr over the ranges the server sent,
--   asked for on attach and again after edits (debounced).
--
-- Folds start open ('foldlevel' 99): `zc` closes the computation under the
-- cursor. setup({ folding = false }) leaves the fold options alone.
local compat = require('hlo_lsp.compat')

local M = {}

M.method = 'textDocument/foldingRange'

--- bufnr -> { levels = string[] (per 1-based line), timer = uv_timer|nil }
local state = {}

--- The fold level strings ('>N' where a range starts, 'N' inside, '0'
--- outside) of `ranges` (0-based LSP lines, inclusive) over `line_count` lines.
function M.levels(ranges, line_count)
  local depth, starts = {}, {}
  for i = 1, line_count do
    depth[i] = 0
  end
  for _, r in ipairs(ranges or {}) do
    local s, e = (r.startLine or 0) + 1, (r.endLine or 0) + 1
    if e > s then
      for i = s, math.min(e, line_count) do
        depth[i] = depth[i] + 1
      end
      if s <= line_count then
        starts[s] = true
      end
    end
  end
  local out = {}
  for i = 1, line_count do
    out[i] = (starts[i] and '>' or '') .. tostring(depth[i])
  end
  return out
end

--- The 'foldexpr' of older versions: the level of line `lnum` (1-based).
function M.foldexpr(lnum)
  local st = state[vim.api.nvim_get_current_buf()]
  local levels = st and st.levels
  return levels and levels[lnum] or '0'
end

local function refold(bufnr)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == bufnr then
      vim.api.nvim_win_call(win, function()
        vim.cmd('setlocal foldmethod=expr')
      end)
    end
  end
end

--- Ask the server for the ranges of `bufnr` and refold its windows.
function M.request(bufnr, client)
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) } }
  compat.client_call(client, 'request', M.method, params, function(err, result)
    if err or not vim.api.nvim_buf_is_valid(bufnr) or state[bufnr] == nil then
      return
    end
    state[bufnr].levels = M.levels(result, vim.api.nvim_buf_line_count(bufnr))
    refold(bufnr)
  end, bufnr)
end

local function set_window_options(win)
  vim.api.nvim_win_call(win, function()
    if compat.nvim_0_11 then
      vim.cmd('setlocal foldexpr=v:lua.vim.lsp.foldexpr()')
    else
      vim.cmd('setlocal foldexpr=v:lua.hlo_lsp_foldexpr(v:lnum)')
    end
    vim.cmd('setlocal foldmethod=expr foldlevel=99')
  end)
end

--- Fold `bufnr` from the server's ranges in every window showing it, now and
--- when it is shown in another window later.
function M.attach(bufnr, client)
  if not compat.nvim_0_11 and state[bufnr] == nil then
    state[bufnr] = {}
    _G.hlo_lsp_foldexpr = M.foldexpr
    M.request(bufnr, client)
    vim.api.nvim_buf_attach(bufnr, false, {
      on_lines = function()
        local st = state[bufnr]
        if st == nil then
          return true -- detach
        end
        if st.timer == nil then
          st.timer = compat.uv.new_timer()
        end
        st.timer:stop()
        st.timer:start(300, 0, vim.schedule_wrap(function()
          if state[bufnr] ~= nil and vim.api.nvim_buf_is_valid(bufnr) then
            M.request(bufnr, client)
          end
        end))
      end,
      on_detach = function()
        local st = state[bufnr]
        if st and st.timer then
          st.timer:stop()
          st.timer:close()
        end
        state[bufnr] = nil
      end,
    })
  end
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == bufnr then
      set_window_options(win)
    end
  end
  vim.api.nvim_create_autocmd('BufWinEnter', {
    group = vim.api.nvim_create_augroup('hlo_lsp_fold_' .. bufnr, { clear = true }),
    buffer = bufnr,
    callback = function()
      set_window_options(vim.api.nvim_get_current_win())
    end,
  })
end

--- The ranges' levels currently known for `bufnr` (older versions), for tests.
function M.known_levels(bufnr)
  return state[bufnr] and state[bufnr].levels
end

return M
