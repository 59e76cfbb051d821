-- Views built from the server's commands (docs/protocol.md, "Readable HLO" and
-- "Workspace"): the readable view (`hlo.readableView`) in a read-only scratch buffer
-- whose lines jump back to the original file, the kernel summary (`hlo.showSummary`),
-- the comparison of two dumps (`hlo.compareDumps`), the jump to the other
-- optimization stage (`hlo/counterpart`) and the dataflow graph page (`hlo/graph`). The server does the work; this module asks
-- and shows. Works on Neovim 0.7+.
local compat = require('hlo_lsp.compat')

local M = {}

M.READABLE_VIEW = 'hlo.readableView'
M.SHOW_SUMMARY = 'hlo.showSummary'
M.COMPARE_DUMPS = 'hlo.compareDumps'
M.COUNTERPART = 'hlo/counterpart'
M.GRAPH = 'hlo/graph'
M.MEMORY = 'hlo/memory'

--- Readable view buffers: bufnr -> { source_uri, source_lines = {[view row] = source row (0-based)} }
local readable = {}

local function hlo()
  return require('hlo_lsp')
end

local resolve = compat.buf

local function is_nil(v)
  return v == nil or v == vim.NIL
end

-- ------------------------------------------------------------------ pure helpers

--- The lines of a view text (the server's text ends with "\n": no empty last line).
function M.text_lines(text)
  local lines = vim.split(text, '\n', { plain = true })
  if #lines > 1 and lines[#lines] == '' then
    table.remove(lines)
  end
  return lines
end

--- `sourceLines` of `hlo.readableView` as {[1-based view row] = 0-based source line}.
function M.source_map(source_lines)
  local out = {}
  if type(source_lines) ~= 'table' then
    return out
  end
  for i, v in ipairs(source_lines) do
    if type(v) == 'number' and v >= 0 and v == math.floor(v) then
      out[i] = v
    end
  end
  return out
end

--- The first view row (1-based) showing `source_line` (0-based), else the row of the
--- nearest earlier source line, else nil.
function M.view_row_for(map, source_line, nrows)
  local best, best_source = nil, -1
  for row = 1, nrows do
    local s = map[row]
    if s ~= nil then
      if s == source_line then
        return row
      end
      if s < source_line and s > best_source then
        best, best_source = row, s
      end
    end
  end
  return best
end

--- A readable view result validated: { lines, map } or nil.
function M.parse_readable(result)
  if type(result) ~= 'table' or type(result.text) ~= 'string' then
    return nil
  end
  return { lines = M.text_lines(result.text), map = M.source_map(result.sourceLines) }
end

-- ------------------------------------------------------------------ requests

--- Sends `method` to the hlo-lsp client of `bufnr`; `on_result(result, client)` runs
--- on success. Returns false (with a message) when no client is attached.
local function request(bufnr, method, params, what, on_result)
  local client = hlo().get_client(bufnr)
  if client == nil then
    compat.notify('no hlo-lsp client is attached to this buffer', vim.log.levels.WARN)
    return false
  end
  compat.client_call(client, 'request', method, params, function(err, result)
    if err then
      compat.notify(what .. ' failed: ' .. tostring(err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    on_result(result, client)
  end, bufnr)
  return true
end

local function execute(bufnr, command, arguments, on_result)
  return request(bufnr, 'workspace/executeCommand', { command = command, arguments = arguments }, command, on_result)
end

-- ------------------------------------------------------------------ scratch buffers

local function find_buffer(name)
  for _, nr in ipairs(vim.api.nvim_list_bufs()) do
    if vim.api.nvim_buf_is_valid(nr) and vim.api.nvim_buf_get_name(nr) == name then
      return nr
    end
  end
  return nil
end

--- Shows `lines` in the scratch buffer `name` (created or reused), in a window: the one
--- already showing it, else a new split (`mods`: ':vertical', ':tab', ... of the command;
--- default a vertical split). Returns bufnr, winid.
function M.show_scratch(name, lines, filetype, mods)
  local buf = find_buffer(name)
  if buf == nil then
    buf = vim.api.nvim_create_buf(true, true) -- listed, scratch
    vim.api.nvim_buf_set_name(buf, name)
  end
  -- buftype first: a `nofile` buffer is never attached to the server (see init.lua)
  vim.bo[buf].buftype = 'nofile'
  vim.bo[buf].bufhidden = 'hide'
  vim.bo[buf].swapfile = false
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  if filetype and vim.bo[buf].filetype ~= filetype then
    vim.bo[buf].filetype = filetype
  end
  local win = vim.fn.bufwinid(buf)
  if win == -1 then
    if mods == nil or mods == '' then
      mods = 'vertical'
    end
    vim.cmd(mods .. ' split')
    win = vim.api.nvim_get_current_win()
    vim.api.nvim_win_set_buf(win, buf)
  else
    vim.api.nvim_set_current_win(win)
  end
  return buf, win
end

local function view_name(kind, path)
  return 'hlo-' .. kind .. '://' .. path
end

-- ------------------------------------------------------------------ readable view

--- The view data of a readable view buffer (nil for other buffers).
function M.readable_info(bufnr)
  return readable[resolve(bufnr)]
end

--- The original file a command applies to: the buffer itself, or the source of a view.
local function source_of(bufnr)
  local info = readable[bufnr]
  if info then
    local src = vim.uri_to_bufnr(info.source_uri)
    return src, info.source_uri
  end
  return bufnr, vim.uri_from_bufnr(bufnr)
end

--- :HloReadable[!] — `hlo.readableView` of the buffer (bang: fusions inlined) in a
--- read-only `hlo` scratch buffer; `gd` / <CR> on a line jump to the original line.
---@param opts {inline_fusions?: boolean, mods?: string}|nil
---@param callback fun(view_bufnr: integer)|nil
function M.readable(bufnr, opts, callback)
  opts = opts or {}
  local src, uri = source_of(resolve(bufnr))
  local from_row = src == vim.api.nvim_get_current_buf() and vim.api.nvim_win_get_cursor(0)[1] - 1 or nil
  local args = { uri, { inlineFusions = opts.inline_fusions == true } }
  return execute(src, M.READABLE_VIEW, args, function(result)
    local view = M.parse_readable(result)
    if view == nil then
      compat.notify('no readable view for this buffer (the server could not parse it)', vim.log.levels.WARN)
      return
    end
    local path = vim.uri_to_fname(uri)
    local name = view_name('readable', path .. (opts.inline_fusions and ' (fusions inlined)' or ''))
    local buf, win = M.show_scratch(name, view.lines, 'hlo', opts.mods)
    readable[buf] = { source_uri = uri, source_lines = view.map }
    local row = from_row and M.view_row_for(view.map, from_row, #view.lines) or 1
    vim.api.nvim_win_set_cursor(win, { row, 0 })
    for _, lhs in ipairs({ 'gd', '<CR>' }) do
      vim.keymap.set('n', lhs, function()
        M.jump_to_source(buf)
      end, { buffer = buf, silent = true, desc = 'hlo-lsp: go to this line in the original file' })
    end
    vim.api.nvim_create_autocmd('BufWipeout', {
      buffer = buf,
      once = true,
      callback = function()
        readable[buf] = nil
      end,
    })
    if callback then
      callback(buf)
    end
  end)
end

--- From a readable view line to its line in the original file (a window showing the
--- file, else the current window). Returns the 0-based source line, or nil.
function M.jump_to_source(bufnr)
  bufnr = resolve(bufnr)
  local info = readable[bufnr]
  if info == nil then
    compat.notify('not a readable view buffer', vim.log.levels.WARN)
    return nil
  end
  local row = vim.api.nvim_win_get_cursor(0)[1]
  local line = info.source_lines[row]
  if line == nil then
    compat.notify('this line shows nothing of the original file', vim.log.levels.INFO)
    return nil
  end
  local src = vim.uri_to_bufnr(info.source_uri)
  vim.cmd("normal! m'") -- <C-o> comes back
  local win = vim.fn.bufwinid(src)
  if win ~= -1 then
    vim.api.nvim_set_current_win(win)
  else
    if not vim.api.nvim_buf_is_loaded(src) then
      vim.fn.bufload(src)
    end
    vim.api.nvim_win_set_buf(0, src)
  end
  local count = vim.api.nvim_buf_line_count(src)
  vim.api.nvim_win_set_cursor(0, { math.min(line + 1, count), 0 })
  vim.cmd('normal! ^')
  return line
end

-- ------------------------------------------------------------------ summary, compare

--- :HloSummary — the kernel summary (`hlo.showSummary`, text format) in a scratch buffer.
---@param opts {mods?: string, format?: string}|nil
---@param callback fun(bufnr: integer)|nil
function M.summary(bufnr, opts, callback)
  opts = opts or {}
  local src, uri = source_of(resolve(bufnr))
  local format = opts.format or 'text'
  return execute(src, M.SHOW_SUMMARY, { uri, { format = format } }, function(result)
    if type(result) ~= 'string' or result == '' then
      compat.notify('no kernel summary for this buffer', vim.log.levels.WARN)
      return
    end
    local name = view_name('summary', vim.uri_to_fname(uri))
    local buf = M.show_scratch(name, M.text_lines(result), format == 'markdown' and 'markdown' or nil, opts.mods)
    if callback then
      callback(buf)
    end
  end)
end

local function file_uri(file)
  return vim.uri_from_fname(vim.fn.fnamemodify(vim.fn.expand(file), ':p'))
end

--- :HloCompare [old] {new} — `hlo.compareDumps` (this buffer is the old file unless
--- two files are given) in a scratch buffer.
---@param files string[] one or two file names
---@param opts {mods?: string}|nil
---@param callback fun(bufnr: integer)|nil
function M.compare(bufnr, files, opts, callback)
  opts = opts or {}
  local src, old_uri = source_of(resolve(bufnr))
  local new_uri
  if #files >= 2 then
    old_uri, new_uri = file_uri(files[1]), file_uri(files[2])
  elseif #files == 1 then
    new_uri = file_uri(files[1])
  else
    compat.notify(':HloCompare needs a file to compare with', vim.log.levels.WARN)
    return false
  end
  return execute(src, M.COMPARE_DUMPS, { old_uri, new_uri, { format = 'text' } }, function(result)
    if type(result) ~= 'string' or result == '' then
      compat.notify('could not compare ' .. vim.uri_to_fname(old_uri) .. ' with ' .. vim.uri_to_fname(new_uri), vim.log.levels.WARN)
      return
    end
    local name = view_name('compare', vim.fn.fnamemodify(vim.uri_to_fname(old_uri), ':t') .. ' vs ' .. vim.uri_to_fname(new_uri))
    local buf = M.show_scratch(name, M.text_lines(result), nil, opts.mods)
    if callback then
      callback(buf)
    end
  end)
end

-- ------------------------------------------------------------------ counterpart

local function jump(location, encoding)
  if vim.lsp.util.show_document then
    return vim.lsp.util.show_document(location, encoding, { focus = true })
  end
  return vim.lsp.util.jump_to_location(location, encoding)
end

--- The position params of the cursor in `bufnr` (the hlo-lsp client's encoding) and
--- that encoding; nil (with a message) in a readable view, where `command` does not work.
local function cursor_params(bufnr, command)
  if readable[bufnr] then
    compat.notify(command .. ' works in the original file (gd goes there)', vim.log.levels.WARN)
    return nil
  end
  local client = hlo().get_client(bufnr)
  local encoding = client and client.offset_encoding or 'utf-16'
  return vim.lsp.util.make_position_params(0, encoding), encoding
end

--- :HloCounterpart — `hlo/counterpart` at the cursor: jump to the instruction in the
--- other optimization stage's file; several: the quickfix list.
---@param callback fun(locations: table[])|nil
function M.counterpart(bufnr, callback)
  bufnr = resolve(bufnr)
  local params, encoding = cursor_params(bufnr, ':HloCounterpart')
  if params == nil then
    return false
  end
  return request(bufnr, M.COUNTERPART, params, M.COUNTERPART, function(result)
    local locations = {}
    for _, loc in ipairs(type(result) == 'table' and result or {}) do
      if type(loc) == 'table' and type(loc.uri) == 'string' and type(loc.range) == 'table' then
        table.insert(locations, loc)
      end
    end
    if #locations == 0 then
      compat.notify('no counterpart found (the before/after optimizations file of this module, with a matching instruction)')
    elseif #locations == 1 then
      vim.cmd("normal! m'")
      jump(locations[1], encoding)
    else
      local items = vim.lsp.util.locations_to_items(locations, encoding)
      vim.fn.setqflist({}, ' ', { title = 'HLO counterparts', items = items })
      vim.cmd('botright copen')
    end
    if callback then
      callback(locations)
    end
  end)
end

-- ------------------------------------------------------------------ graph

--- The command that opens a file with the system's handler: `graph_opener` of setup(),
--- else vim.ui.open (0.10+), else xdg-open / open. Returns nil when there is none.
local function open_file(path)
  local opener = hlo().config.graph_opener
  if type(opener) == 'function' then
    return opener(path)
  end
  if vim.ui.open then
    return vim.ui.open(path)
  end
  local cmd = vim.fn.has('mac') == 1 and 'open' or 'xdg-open'
  if vim.fn.executable(cmd) == 1 then
    return vim.fn.jobstart({ cmd, path }, { detach = true })
  end
  compat.notify('the graph is in ' .. path .. ' (no xdg-open here: open it in a browser)')
  return nil
end

--- Writes a page the server made to `path` (default a temporary .html file), opens it
--- (`open_file`) and hands the path to `callback`; a message when it cannot be written.
local function show_page(page, path, kind, callback)
  path = path or (vim.fn.tempname() .. '-hlo-' .. kind .. '.html')
  local f = io.open(path, 'w')
  if f == nil then
    compat.notify('cannot write ' .. path, vim.log.levels.ERROR)
    return
  end
  f:write(page)
  f:close()
  open_file(path)
  if callback then
    callback(path)
  end
end

--- :HloGraph — `hlo/graph` with `page: true` at the cursor (an instruction: its
--- neighbourhood of `hops` steps; a computation header: that computation): the page is
--- written to a temporary .html file and opened in the browser, where a click on a node
--- shows its file:line.
---@param opts {hops?: integer, path?: string}|nil
---@param callback fun(path: string)|nil
function M.graph(bufnr, opts, callback)
  bufnr = resolve(bufnr)
  opts = opts or {}
  local params = cursor_params(bufnr, ':HloGraph')
  if params == nil then
    return false
  end
  params.page = true
  params.hops = opts.hops
  return request(bufnr, M.GRAPH, params, M.GRAPH, function(result)
    if type(result) ~= 'table' or type(result.page) ~= 'string' or result.page == '' then
      compat.notify('no graph here: put the cursor on an instruction or a computation header', vim.log.levels.WARN)
      return
    end
    if type(result.message) == 'string' and result.message ~= '' then
      compat.notify(result.message)
    end
    show_page(result.page, opts.path, 'graph', callback)
  end)
end

--- :HloMemory — `hlo/memory`: bytes live over the schedule from XLA's reports beside the
--- dump (the peak, the buffers live then), written to a temporary .html file and opened.
---@param opts {path?: string}|nil
---@param callback fun(path: string)|nil
function M.memory(bufnr, opts, callback)
  bufnr = resolve(bufnr)
  opts = opts or {}
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) } }
  return request(bufnr, M.MEMORY, params, M.MEMORY, function(result)
    if type(result) ~= 'table' or type(result.page) ~= 'string' or result.page == '' then
      compat.notify('no memory report beside this file (XLA writes *-live-range.txt and '
        .. '*-buffer-assignment.txt beside after-optimizations dumps)', vim.log.levels.WARN)
      return
    end
    show_page(result.page, opts.path, 'memory', callback)
  end)
end

-- ------------------------------------------------------------------ setup

--- Client-side handler of the code lens command `hlo.showSummary` (vim.lsp.codelens.run).
function M.register_lsp_commands()
  vim.lsp.commands[M.SHOW_SUMMARY] = function(command, ctx)
    local bufnr = ctx and ctx.bufnr or 0
    local uri = command.arguments and command.arguments[1]
    if type(uri) == 'string' then
      bufnr = vim.uri_to_bufnr(uri)
    end
    M.summary(bufnr)
  end
end

--- The user commands :HloReadable[!], :HloSummary, :HloCompare, :HloCounterpart, :HloGraph,
--- :HloMemory.
function M.create_commands()
  vim.api.nvim_create_user_command('HloReadable', function(args)
    M.readable(0, { inline_fusions = args.bang, mods = args.mods })
  end, { bang = true, desc = 'hlo-lsp: readable view of this HLO file (! inlines fusions)' })
  vim.api.nvim_create_user_command('HloSummary', function(args)
    M.summary(0, { mods = args.mods })
  end, { desc = 'hlo-lsp: kernel summary of this HLO file' })
  vim.api.nvim_create_user_command('HloCompare', function(args)
    M.compare(0, args.fargs, { mods = args.mods })
  end, { nargs = '+', complete = 'file', desc = 'hlo-lsp: compare this HLO file (old) with {file} (new), or {old} with {new}' })
  vim.api.nvim_create_user_command('HloCounterpart', function()
    M.counterpart(0)
  end, { desc = 'hlo-lsp: the same instruction in the before/after optimizations file' })
  vim.api.nvim_create_user_command('HloGraph', function(args)
    M.graph(0, { hops = tonumber(args.args) })
  end, { nargs = '?', desc = 'hlo-lsp: dataflow graph around the cursor ([hops]) in the browser' })
  vim.api.nvim_create_user_command('HloMemory', function()
    M.memory(0)
  end, { desc = 'hlo-lsp: memory over the schedule (from XLA\'s reports) in the browser' })
end

return M
