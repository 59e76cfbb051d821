-- Views built from the server's commands (docs/protocol.md, "Readable HLO" and
-- "Workspace"): the readable view (`hlo.readableView`) in a read-only scratch buffer
-- whose lines jump back to the original file, the kernel summary (`hlo.showSummary`),
-- the comparison of two dumps (`hlo.compareDumps`), the jump to the other
-- optimization stage (`hlo/counterpart`), the dataflow graph and memory pages (`hlo/graph`,
-- `hlo/memory`) and, without a browser, the same pictures as text with jumps. The server
-- does the work; this module asks and shows. Works on Neovim 0.7+.
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
  local client = hlo().attached_client(bufnr)
  if client == nil then
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

--- Makes the buffer of `uri` current, after marking the jump (<C-o> comes back): in a
--- window already showing it, else in the current window, or in a new window made by the
--- command `split` (e.g. 'aboveleft split') when given. Returns its bufnr.
local function go_to_source(uri, split)
  local src = vim.uri_to_bufnr(uri)
  vim.cmd("normal! m'")
  local win = vim.fn.bufwinid(src)
  if win ~= -1 then
    vim.api.nvim_set_current_win(win)
    return src
  end
  if not vim.api.nvim_buf_is_loaded(src) then
    vim.fn.bufload(src)
  end
  if split then
    vim.cmd(split)
  end
  vim.api.nvim_win_set_buf(0, src)
  return src
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
  local src = go_to_source(info.source_uri, nil)
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
      compat.jump(locations[1], encoding)
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

--- Why no browser can show a page here, or nil: on Linux and the BSDs (not macOS, Windows
--- or WSL) without `$DISPLAY` and `$WAYLAND_DISPLAY`, as over SSH, there is no screen
--- for one (xdg-open would fail, or start a text browser nobody sees).
function M.no_display()
  if vim.fn.has('mac') == 1 or vim.fn.has('win32') == 1 or vim.fn.has('wsl') == 1 then
    return nil
  end
  local function set(v)
    return v ~= nil and v ~= ''
  end
  if set(vim.env.DISPLAY) or set(vim.env.WAYLAND_DISPLAY) then
    return nil
  end
  return 'no display: $DISPLAY and $WAYLAND_DISPLAY are unset'
end

--- Calls `on_fail(why)` when the process of `vim.ui.open` (a vim.SystemObj) exits with an
--- error; one still running after 10 s is taken to have found a browser.
local function watch_opener(obj, on_fail)
  if type(obj) ~= 'table' or type(obj.is_closing) ~= 'function' or type(obj.wait) ~= 'function' then
    return
  end
  local name = type(obj.cmd) == 'table' and tostring(obj.cmd[1]) or 'the opener'
  local waited, timer = 0, nil
  timer = vim.fn.timer_start(50, function()
    waited = waited + 50
    if obj:is_closing() then
      vim.fn.timer_stop(timer)
      local ok, done = pcall(obj.wait, obj, 1000) -- exited: its result is at hand
      if ok and type(done) == 'table' and done.code ~= 0 then
        on_fail(name .. ' exited ' .. tostring(done.code))
      end
    elseif waited >= 10000 then
      vim.fn.timer_stop(timer)
    end
  end, { ['repeat'] = -1 })
end

--- Opens a file with the system's handler: `graph_opener` of setup() (a failure: it
--- raises an error or returns false), else, when there is a display (`M.no_display`),
--- vim.ui.open (0.10+; a failure: no handler, or its process exits non-zero), else
--- xdg-open / open (a failure: missing, or it exits non-zero). `on_fail(why)` runs on a
--- failure, at once or when the opener exits.
local function open_file(path, on_fail)
  local opener = hlo().config.graph_opener
  if type(opener) == 'function' then
    local ok, res, err = pcall(opener, path)
    if not ok then
      return on_fail('graph_opener failed: ' .. tostring(res))
    elseif res == false then
      return on_fail('graph_opener returned false' .. (err and (': ' .. tostring(err)) or ''))
    end
    return
  end
  local why = M.no_display()
  if why then
    return on_fail(why)
  end
  if vim.ui.open then
    local ok, obj, err = pcall(vim.ui.open, path)
    if not ok or obj == nil then
      return on_fail(tostring(ok and (err or 'vim.ui.open found no handler') or obj))
    end
    return watch_opener(obj, on_fail)
  end
  local cmd = vim.fn.has('mac') == 1 and 'open' or 'xdg-open'
  if vim.fn.executable(cmd) ~= 1 then
    return on_fail(cmd .. ' not found')
  end
  local job = vim.fn.jobstart({ cmd, path }, {
    detach = true,
    on_exit = function(_, code)
      if code ~= 0 then
        on_fail(cmd .. ' exited ' .. tostring(code))
      end
    end,
  })
  if job <= 0 then
    on_fail('could not start ' .. cmd)
  end
end

--- Writes a page the server made to `path` (default a temporary .html file), opens it
--- (`open_file`) and hands the path to `callback`; a message when it cannot be written.
--- When no browser opens it, a message names the file and `on_fail(why)` runs (the
--- text view).
local function show_page(page, path, kind, callback, on_fail)
  path = path or (vim.fn.tempname() .. '-hlo-' .. kind .. '.html')
  local f = io.open(path, 'w')
  if f == nil then
    compat.notify('cannot write ' .. path, vim.log.levels.ERROR)
    return
  end
  f:write(page)
  f:close()
  open_file(path, function(why)
    compat.notify(kind .. ' page written to ' .. path .. ' (no browser here: ' .. why
      .. '); the text view shows it: <CR> goes to an instruction', vim.log.levels.WARN)
    if on_fail then
      on_fail(why)
    end
  end)
  if callback then
    callback(path)
  end
end

-- ------------------------------------------------------------------ text pictures

--- Text picture buffers: bufnr -> { source_uri, encoding, targets = {[1-based row] = Range} }
local pictures = {}

--- A text picture reply (`hlo/graph` or `hlo/memory` with `format = 'text'`) validated:
--- { lines, targets = {[1-based row] = Range}, cursor (1-based row), message } or nil.
function M.parse_picture(result)
  if type(result) ~= 'table' or type(result.lines) ~= 'table' or #result.lines == 0 then
    return nil
  end
  local lines = {}
  for i, line in ipairs(result.lines) do
    if type(line) ~= 'string' then
      return nil
    end
    lines[i] = line:gsub('[\r\n]', ' ') -- one line each (the server escapes them already)
  end
  local targets = {}
  for _, t in ipairs(type(result.targets) == 'table' and result.targets or {}) do
    if type(t) == 'table' and type(t.line) == 'number' and type(t.range) == 'table'
      and type(t.range.start) == 'table' then
      targets[t.line + 1] = t.range
    end
  end
  local cursor = type(result.cursorLine) == 'number' and result.cursorLine + 1 or 1
  return {
    lines = lines,
    targets = targets,
    cursor = math.max(1, math.min(cursor, #lines)),
    message = type(result.message) == 'string' and result.message or '',
  }
end

--- The data of a text picture buffer (nil for other buffers).
function M.picture_info(bufnr)
  return pictures[resolve(bufnr)]
end

--- From a text picture line to the instruction it names, in the source file (a window
--- showing it, else a new split). Returns the 0-based source line, or nil.
function M.jump_to_target(bufnr)
  bufnr = resolve(bufnr)
  local info = pictures[bufnr]
  if info == nil then
    compat.notify('not a text picture buffer', vim.log.levels.WARN)
    return nil
  end
  local range = info.targets[vim.api.nvim_win_get_cursor(0)[1]]
  if range == nil then
    compat.notify('this line names no instruction', vim.log.levels.INFO)
    return nil
  end
  local src = go_to_source(info.source_uri, 'aboveleft split')
  local line = math.min(range.start.line, vim.api.nvim_buf_line_count(src) - 1)
  local text = vim.api.nvim_buf_get_lines(src, line, line + 1, false)[1] or ''
  vim.api.nvim_win_set_cursor(0, { line + 1, compat.byte_col(text, range.start.character, info.encoding) })
  return line
end

--- Shows a parsed picture in the scratch buffer `name` (`buftype=nofile`,
--- `bufhidden=wipe`, filetype `hlopicture`), the cursor on its cursor line; `<CR>` goes
--- to the instruction of the line, `q` closes. Returns bufnr.
local function show_picture(name, pic, uri, encoding, mods)
  local buf, win = M.show_scratch(name, pic.lines, 'hlopicture', mods)
  vim.bo[buf].bufhidden = 'wipe'
  vim.wo[win].wrap = false
  pictures[buf] = { source_uri = uri, encoding = encoding, targets = pic.targets }
  vim.api.nvim_win_set_cursor(win, { pic.cursor, 0 })
  vim.keymap.set('n', '<CR>', function()
    M.jump_to_target(buf)
  end, { buffer = buf, silent = true, desc = 'hlo-lsp: go to the instruction of this line' })
  vim.keymap.set('n', 'q', function()
    if #vim.api.nvim_tabpage_list_wins(0) > 1 then
      vim.cmd('close')
    else
      vim.cmd('bwipeout ' .. buf)
    end
  end, { buffer = buf, silent = true, desc = 'hlo-lsp: close this view' })
  vim.api.nvim_create_autocmd('BufWipeout', {
    buffer = buf,
    once = true,
    callback = function()
      pictures[buf] = nil
    end,
  })
  if pic.message ~= '' then
    compat.notify(pic.message)
  end
  return buf
end

--- Asks `method` for a picture as text (`params` with `format = 'text'`) and shows the
--- answer with `show_picture`, named after `kind` and the document; `empty` is the
--- warning when the server has no picture there.
local function request_picture(bufnr, method, params, kind, encoding, opts, empty, callback)
  return request(bufnr, method, params, method, function(result)
    local pic = M.parse_picture(result)
    if pic == nil then
      compat.notify(empty, vim.log.levels.WARN)
      return
    end
    local uri = params.textDocument.uri
    local buf = show_picture(view_name(kind, vim.uri_to_fname(uri)), pic, uri, encoding, opts.mods)
    if callback then
      callback(buf)
    end
  end)
end

--- :HloGraphText [hops] — `hlo/graph` with `format = 'text'` at the cursor: the
--- instruction, its operands and its users as indented trees up to `hops` steps (a
--- computation header: its parameters and ROOT) in a scratch buffer; `<CR>` on a line
--- goes to its instruction, `q` closes. `opts.params`: the position params to ask
--- about (default the cursor's).
---@param opts {hops?: integer, mods?: string, params?: table, encoding?: string}|nil
---@param callback fun(bufnr: integer)|nil
function M.graph_text(bufnr, opts, callback)
  bufnr = resolve(bufnr)
  opts = opts or {}
  local params, encoding = opts.params, opts.encoding
  if params == nil then
    params, encoding = cursor_params(bufnr, ':HloGraphText')
    if params == nil then
      return false
    end
  end
  params = vim.tbl_extend('force', params, { format = 'text', page = false })
  params.hops = params.hops or opts.hops
  return request_picture(bufnr, M.GRAPH, params, 'graph', encoding, opts,
    'no graph here: put the cursor on an instruction or a computation header', callback)
end

--- :HloMemoryText — `hlo/memory` with `format = 'text'`: bytes live over the schedule
--- as a bar chart (the peak marked), then the largest buffers live at the peak, in a
--- scratch buffer; `<CR>` on a line goes to its instruction, `q` closes.
---@param opts {mods?: string}|nil
---@param callback fun(bufnr: integer)|nil
function M.memory_text(bufnr, opts, callback)
  bufnr = resolve(bufnr)
  opts = opts or {}
  local uri = vim.uri_from_bufnr(bufnr)
  local client = hlo().get_client(bufnr)
  local encoding = client and client.offset_encoding or 'utf-16'
  local params = { textDocument = { uri = uri }, format = 'text' }
  return request_picture(bufnr, M.MEMORY, params, 'memory', encoding, opts,
    'no memory report beside this file (XLA writes *-live-range.txt and '
      .. '*-buffer-assignment.txt beside after-optimizations dumps)', callback)
end

--- :HloGraph — `hlo/graph` with `page: true` at the cursor (an instruction: its
--- neighbourhood of `hops` steps; a computation header: that computation): the page is
--- written to a temporary .html file and opened in the browser, where a click on a node
--- shows its file:line. Without a browser (no display, the opener fails) a message names
--- the file and the text view (`M.graph_text`) opens instead.
---@param opts {hops?: integer, path?: string, mods?: string}|nil
---@param callback fun(path: string)|nil
function M.graph(bufnr, opts, callback)
  bufnr = resolve(bufnr)
  opts = opts or {}
  local params, encoding = cursor_params(bufnr, ':HloGraph')
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
    show_page(result.page, opts.path, 'graph', callback, function()
      M.graph_text(bufnr, { params = params, encoding = encoding, mods = opts.mods })
    end)
  end)
end

--- :HloMemory — `hlo/memory`: bytes live over the schedule from XLA's reports beside the
--- dump (the peak, the buffers live then), written to a temporary .html file and opened;
--- without a browser, a message names the file and the text view (`M.memory_text`)
--- opens instead.
---@param opts {path?: string, mods?: string}|nil
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
    show_page(result.page, opts.path, 'memory', callback, function()
      M.memory_text(bufnr, { mods = opts.mods })
    end)
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
--- :HloMemory, :HloGraphText, :HloMemoryText.
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
    M.graph(0, { hops = tonumber(args.args), mods = args.mods })
  end, { nargs = '?', desc = 'hlo-lsp: dataflow graph around the cursor ([hops]) in the browser' })
  vim.api.nvim_create_user_command('HloMemory', function(args)
    M.memory(0, { mods = args.mods })
  end, { desc = 'hlo-lsp: memory over the schedule (from XLA\'s reports) in the browser' })
  vim.api.nvim_create_user_command('HloGraphText', function(args)
    M.graph_text(0, { hops = tonumber(args.args), mods = args.mods })
  end, { nargs = '?', desc = 'hlo-lsp: dataflow around the cursor ([hops]) as text trees' })
  vim.api.nvim_create_user_command('HloMemoryText', function(args)
    M.memory_text(0, { mods = args.mods })
  end, { desc = 'hlo-lsp: memory over the schedule as a text bar chart' })
end

return M
