-- Inline hiding of metadata (and, optionally, backend_config /
-- frontend_attributes) with extmark conceal. The server tells which ranges may
-- be hidden through the custom request `hlo/inlineRegions` (docs/protocol.md).
--
-- The buffer text is never changed: ranges are concealed with extmarks
-- (`conceal = ''`, available since Neovim 0.6), which needs 'conceallevel' >= 2
-- in the windows showing the buffer. The plugin sets it window-locally while
-- hiding and restores the previous value when showing again.
local compat = require('hlo_lsp.compat')

local M = {}

M.ns = vim.api.nvim_create_namespace('hlo_lsp_inline')
M.method = 'hlo/inlineRegions'

local cfg = {
  hidden = true,
  kinds = { metadata = true },
  marker = nil, -- e.g. '⋯': shown in place of each hidden range
  hl_group = nil,
  debounce_ms = 300,
  concealcursor = nil, -- e.g. 'nc': also hide on the cursor line
  client_name = 'hlo_lsp',
  nowrap = true, -- 'nowrap' in windows while hiding
}

--- bufnr -> { regions = InlineRegion[]|nil, encoding = string, timer = uv_timer|nil }
local buffers = {}
--- winid -> { conceallevel = n, concealcursor = s, wrap = b } saved before we changed them
local saved = {}

local global_group

local function kinds_set(kinds)
  local set = {}
  for _, k in ipairs(kinds or {}) do
    set[k] = true
  end
  return set
end

function M.configure(opts)
  opts = opts or {}
  if opts.hidden ~= nil then
    cfg.hidden = opts.hidden and true or false
  end
  if opts.kinds ~= nil then
    cfg.kinds = kinds_set(opts.kinds)
  end
  if opts.marker ~= nil then
    cfg.marker = opts.marker ~= '' and opts.marker or nil
  end
  if opts.hl_group ~= nil then
    cfg.hl_group = opts.hl_group
  end
  if opts.debounce_ms ~= nil then
    cfg.debounce_ms = opts.debounce_ms
  end
  if opts.concealcursor ~= nil then
    cfg.concealcursor = opts.concealcursor
  end
  if opts.client_name ~= nil then
    cfg.client_name = opts.client_name
  end
  if opts.nowrap ~= nil then
    cfg.nowrap = opts.nowrap and true or false
  end
end

function M.is_hidden()
  return cfg.hidden
end

function M.enabled_kinds()
  local out = {}
  for k, v in pairs(cfg.kinds) do
    if v then
      table.insert(out, k)
    end
  end
  table.sort(out)
  return out
end

local resolve = compat.buf

function M.is_attached(bufnr)
  return buffers[resolve(bufnr)] ~= nil
end

--- The regions last received for `bufnr` (nil before the first answer).
function M.regions(bufnr)
  local st = buffers[resolve(bufnr)]
  return st and st.regions
end

-- ------------------------------------------------------------------ windows

local function win_call(win, fn)
  if win == vim.api.nvim_get_current_win() then
    return fn()
  end
  return vim.api.nvim_win_call(win, fn)
end

local function set_win_local(win, name, value)
  win_call(win, function()
    vim.cmd(string.format('setlocal %s=%s', name, tostring(value)))
  end)
end

--- Make `win`'s conceal options match the state of the buffer it shows.
function M.sync_window(win)
  if not vim.api.nvim_win_is_valid(win) then
    saved[win] = nil
    return
  end
  local buf = vim.api.nvim_win_get_buf(win)
  local managed = buffers[buf] ~= nil
  if managed and cfg.hidden then
    if saved[win] == nil then
      saved[win] = {
        conceallevel = vim.wo[win].conceallevel,
        concealcursor = vim.wo[win].concealcursor,
        wrap = vim.wo[win].wrap,
      }
    end
    if vim.wo[win].conceallevel < 2 then
      set_win_local(win, 'conceallevel', 2)
    end
    -- Wrapping counts the hidden text: blank wrapped rows and breaks inside
    -- words. Off while hiding (as the VS Code extension does), restored after.
    if cfg.nowrap and vim.wo[win].wrap then
      win_call(win, function()
        vim.cmd('setlocal nowrap')
      end)
    end
    if cfg.concealcursor and vim.wo[win].concealcursor ~= cfg.concealcursor then
      set_win_local(win, 'concealcursor', cfg.concealcursor)
    end
  elseif managed and saved[win] ~= nil then
    -- Showing again: give the window back the user's values.
    local prev = saved[win]
    saved[win] = nil
    if vim.wo[win].conceallevel ~= prev.conceallevel then
      set_win_local(win, 'conceallevel', prev.conceallevel)
    end
    if cfg.concealcursor and vim.wo[win].concealcursor ~= prev.concealcursor then
      set_win_local(win, 'concealcursor', prev.concealcursor)
    end
    if cfg.nowrap and prev.wrap and not vim.wo[win].wrap then
      win_call(win, function()
        vim.cmd('setlocal wrap')
      end)
    end
  end
  -- A window that now shows another buffer keeps its saved values: with
  -- :setlocal our change only applies to the HLO buffer in that window, and is
  -- undone the next time the HLO buffer is shown there unhidden.
end

local function sync_windows_of(bufnr)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == bufnr then
      M.sync_window(win)
    end
  end
end

local function sync_all_windows()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    M.sync_window(win)
  end
  for win in pairs(saved) do
    if not vim.api.nvim_win_is_valid(win) then
      saved[win] = nil
    end
  end
end

-- ------------------------------------------------------------------ rendering

--- LSP position -> (row, byte col), clamped to the buffer.
local function to_byte_pos(bufnr, pos, encoding, line_count)
  local row = pos.line
  if row >= line_count then
    local last = line_count - 1
    local text = vim.api.nvim_buf_get_lines(bufnr, last, last + 1, false)[1] or ''
    return last, #text
  end
  local text = vim.api.nvim_buf_get_lines(bufnr, row, row + 1, false)[1] or ''
  return row, compat.byte_col(text, pos.character, encoding)
end

--- Redraw the conceal extmarks of `bufnr` from its stored regions.
function M.render(bufnr)
  if not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  local st = buffers[bufnr]
  if st and cfg.hidden and st.regions then
    local line_count = vim.api.nvim_buf_line_count(bufnr)
    for _, region in ipairs(st.regions) do
      local range = region.range
      if cfg.kinds[region.kind] and range and range.start and range['end'] and range.start.line < line_count then
        local srow, scol = to_byte_pos(bufnr, range.start, st.encoding, line_count)
        local erow, ecol = to_byte_pos(bufnr, range['end'], st.encoding, line_count)
        if erow > srow or (erow == srow and ecol > scol) then
          local opts = {
            end_row = erow,
            end_col = ecol,
            conceal = cfg.marker or '',
          }
          if cfg.hl_group then
            opts.hl_group = cfg.hl_group
          end
          pcall(vim.api.nvim_buf_set_extmark, bufnr, M.ns, srow, scol, opts)
        end
      end
    end
  end
  sync_windows_of(bufnr)
end

--- Store `regions` (an `hlo/inlineRegions` result) for `bufnr` and render them.
--- Also usable without a server (tests feed fake regions through it).
---@param bufnr integer
---@param regions table[] InlineRegion[]
---@param encoding string|nil position encoding of the ranges (default utf-16)
function M.apply(bufnr, regions, encoding)
  if bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  local st = buffers[bufnr]
  if st == nil then
    st = {}
    buffers[bufnr] = st
  end
  st.regions = regions or {}
  st.encoding = encoding or st.encoding or 'utf-16'
  M.render(bufnr)
end

-- ------------------------------------------------------------------ requests

local function find_client(bufnr)
  return compat.running_client(bufnr, cfg.client_name)
end

--- Ask the server for the regions of `bufnr` (asynchronous).
function M.request(bufnr)
  local st = buffers[bufnr]
  if st == nil or not vim.api.nvim_buf_is_valid(bufnr) then
    return
  end
  local client = find_client(bufnr)
  if client == nil then
    return
  end
  local tick = vim.api.nvim_buf_get_changedtick(bufnr)
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) } }
  local encoding = client.offset_encoding or 'utf-16'
  st.pending = (st.pending or 0) + 1
  compat.client_call(client, 'request', M.method, params, function(err, result)
    st.pending = st.pending - 1
    if buffers[bufnr] ~= st or not vim.api.nvim_buf_is_valid(bufnr) then
      return
    end
    if err then
      st.last_error = err
      return
    end
    if vim.api.nvim_buf_get_changedtick(bufnr) ~= tick then
      -- Edited while waiting: these ranges may be stale. Ask again.
      M.schedule_request(bufnr)
      return
    end
    M.apply(bufnr, result or {}, encoding)
  end, bufnr)
end

--- Debounced `request`.
function M.schedule_request(bufnr)
  local st = buffers[bufnr]
  if st == nil then
    return
  end
  if st.timer == nil then
    st.timer = compat.uv.new_timer()
  end
  st.timer:stop()
  st.timer:start(
    cfg.debounce_ms,
    0,
    vim.schedule_wrap(function()
      M.request(bufnr)
    end)
  )
end

-- ------------------------------------------------------------------ attach

local function ensure_global_autocmds()
  if global_group then
    return
  end
  global_group = vim.api.nvim_create_augroup('hlo_lsp_inline', { clear = true })
  -- :split copies the window options, our conceallevel included: the new
  -- window inherits the user's value saved for the window it was split from.
  vim.api.nvim_create_autocmd('WinNew', {
    group = global_group,
    callback = function()
      local new = vim.api.nvim_get_current_win()
      local prev = vim.fn.win_getid(vim.fn.winnr('#'))
      if prev ~= 0 and prev ~= new and saved[prev] and saved[new] == nil then
        saved[new] = vim.deepcopy(saved[prev])
      end
    end,
  })
  -- A window switching between an HLO buffer and another buffer.
  vim.api.nvim_create_autocmd({ 'BufWinEnter', 'WinEnter' }, {
    group = global_group,
    callback = function()
      M.sync_window(vim.api.nvim_get_current_win())
    end,
  })
  vim.api.nvim_create_autocmd('WinClosed', {
    group = global_group,
    callback = function(args)
      local win = tonumber(args.match)
      if win then
        saved[win] = nil
      end
    end,
  })
end

--- Start managing `bufnr` (idempotent). `client` may be nil (tests).
function M.attach(bufnr, client)
  if bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  ensure_global_autocmds()
  local st = buffers[bufnr]
  if st == nil then
    st = { encoding = client and client.offset_encoding or 'utf-16' }
    buffers[bufnr] = st
  end
  if client and st.client_id == client.id then
    return -- already attached to this client (on_attach and LspAttach both call us)
  end
  if client then
    st.client_id = client.id
    st.encoding = client.offset_encoding or st.encoding
  end
  if not st.group then
    st.group = vim.api.nvim_create_augroup('hlo_lsp_inline_' .. bufnr, { clear = true })
    vim.api.nvim_create_autocmd({ 'TextChanged', 'TextChangedI' }, {
      group = st.group,
      buffer = bufnr,
      callback = function()
        M.schedule_request(bufnr)
      end,
    })
    -- Changes made without TextChanged (API calls from scripts and plugins).
    vim.api.nvim_buf_attach(bufnr, false, {
      on_lines = function()
        if buffers[bufnr] ~= st then
          return true -- detached
        end
        M.schedule_request(bufnr)
      end,
    })
    vim.api.nvim_create_autocmd('BufEnter', {
      group = st.group,
      buffer = bufnr,
      callback = function()
        M.sync_window(vim.api.nvim_get_current_win())
        M.request(bufnr)
      end,
    })
    vim.api.nvim_create_autocmd({ 'BufUnload', 'BufWipeout' }, {
      group = st.group,
      buffer = bufnr,
      callback = function()
        M.detach(bufnr)
      end,
    })
  end
  sync_windows_of(bufnr)
  if client then
    M.request(bufnr)
  end
end

--- Stop managing `bufnr`: remove the extmarks, autocmds and window changes.
function M.detach(bufnr)
  local st = buffers[bufnr]
  if st == nil then
    return
  end
  if st.timer then
    st.timer:stop()
    st.timer:close()
  end
  if st.group then
    pcall(vim.api.nvim_del_augroup_by_id, st.group)
  end
  -- Restore windows while the buffer still counts as managed (shown state).
  local was_hidden = cfg.hidden
  cfg.hidden = false
  pcall(sync_windows_of, bufnr)
  cfg.hidden = was_hidden
  buffers[bufnr] = nil
  if vim.api.nvim_buf_is_valid(bufnr) then
    vim.api.nvim_buf_clear_namespace(bufnr, M.ns, 0, -1)
  end
end

-- ------------------------------------------------------------------ toggle

--- Hide (true) or show (false) the enabled kinds in every managed buffer.
function M.set_hidden(hidden)
  cfg.hidden = hidden and true or false
  for bufnr in pairs(buffers) do
    if vim.api.nvim_buf_is_valid(bufnr) then
      M.render(bufnr)
      if cfg.hidden and buffers[bufnr].regions == nil then
        M.request(bufnr)
      end
    end
  end
  sync_all_windows()
end

function M.toggle()
  M.set_hidden(not cfg.hidden)
  return cfg.hidden
end

return M
