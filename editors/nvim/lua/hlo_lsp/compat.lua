-- Small helpers that paper over API differences between Neovim 0.7 and the
-- current release. Everything version-dependent in the plugin goes through here.
local M = {}

local function has(feature)
  return vim.fn.has(feature) == 1
end

M.has = has
M.nvim_0_8 = has('nvim-0.8')
M.nvim_0_10 = has('nvim-0.10')
M.nvim_0_11 = has('nvim-0.11')

local uv = vim.uv or vim.loop
M.uv = uv

--- Call a method on an LSP client object. Neovim 0.11 turned the client's
--- functions into methods (`client:request(...)`); older versions use
--- `client.request(...)`.
function M.client_call(client, method, ...)
  if M.nvim_0_11 then
    return client[method](client, ...)
  end
  return client[method](...)
end

function M.client_is_stopped(client)
  if client == nil then
    return true
  end
  local ok, stopped = pcall(M.client_call, client, 'is_stopped')
  return not ok or stopped
end

--- Clients filtered by `name` and/or `bufnr`.
---@param filter {name?: string, bufnr?: integer}
function M.get_clients(filter)
  filter = filter or {}
  if vim.lsp.get_clients then
    return vim.lsp.get_clients(filter)
  end
  local out = {}
  for _, client in pairs(vim.lsp.get_active_clients()) do
    if
      (filter.name == nil or client.name == filter.name)
      and (filter.bufnr == nil or vim.lsp.buf_is_attached(filter.bufnr, client.id))
    then
      table.insert(out, client)
    end
  end
  return out
end

--- `bufnr`, with nil or 0 meaning the current buffer.
function M.buf(bufnr)
  if bufnr == nil or bufnr == 0 then
    return vim.api.nvim_get_current_buf()
  end
  return bufnr
end

--- The running client called `name` attached to buffer `bufnr` (nil or 0: the
--- current one), or nil.
function M.running_client(bufnr, name)
  for _, client in ipairs(M.get_clients({ bufnr = M.buf(bufnr), name = name })) do
    if not M.client_is_stopped(client) then
      return client
    end
  end
  return nil
end

--- LSP position character offset (in `encoding` units) -> byte column of `line`.
--- Out-of-range characters are clamped to the end of the line.
---@param line string
---@param character integer
---@param encoding string|nil 'utf-8' | 'utf-16' | 'utf-32' (default 'utf-16')
function M.byte_col(line, character, encoding)
  encoding = encoding or 'utf-16'
  if character <= 0 then
    return 0
  end
  if encoding == 'utf-8' then
    return math.min(character, #line)
  end
  local ok, col
  if M.nvim_0_11 then
    ok, col = pcall(vim.str_byteindex, line, encoding, character, false)
  else
    ok, col = pcall(vim.str_byteindex, line, character, encoding == 'utf-16')
  end
  if not ok or col == nil then
    return #line
  end
  return math.min(col, #line)
end

--- Find the nearest ancestor directory of `path` holding one of `markers`.
---@param path string absolute file path
---@param markers string[]
---@return string|nil
function M.find_root(path, markers)
  if path == nil or path == '' or markers == nil or #markers == 0 then
    return nil
  end
  local dir = vim.fn.fnamemodify(path, ':p:h')
  -- The markers are tried in order, each searched all the way up: the first
  -- marker found anywhere above wins (the same semantics as vim.lsp.config).
  for _, marker in ipairs(markers) do
    local d = dir
    while d and d ~= '' do
      if uv.fs_stat(d .. '/' .. marker) then
        return d
      end
      local parent = vim.fn.fnamemodify(d, ':h')
      if parent == d then
        break
      end
      d = parent
    end
  end
  return nil
end

--- Open `location` (an LSP Location) and put the cursor there, focused:
--- vim.lsp.util.show_document where it exists (0.10+), jump_to_location before.
function M.jump(location, encoding)
  if vim.lsp.util.show_document then
    return vim.lsp.util.show_document(location, encoding, { focus = true })
  end
  return vim.lsp.util.jump_to_location(location, encoding)
end

function M.notify(msg, level)
  vim.notify('hlo-lsp: ' .. msg, level or vim.log.levels.INFO)
end

return M
