-- The pass history (docs/protocol.md, "Pass history"; issue 44), for dumps made with
-- XLA_FLAGS=--xla_dump_hlo_pass_re=.*:
--   :HloPasses  a scratch buffer with the timeline of the buffer's module (`hlo/passHistory`):
--               one row per pass that changed it, as `hlo-lsp passes` prints it; <CR> on a
--               row opens its diff in a new tab (:diffsplit of the snapshot before the step
--               and the step's own), on an end row the file. The buffer follows the dump
--               directory: on the server's `hlo/passHistoryChanged` for its directory (a
--               recompile, an experiment, XLA writing more snapshots) it is asked again and
--               redrawn in place.
--   :HloBlame   the pass that created the instruction under the cursor (`hlo/passBlame`):
--               jumps to its first appearance (the snapshot, on its name) and fills the
--               quickfix list with that and each pass that changed it since; with XLA:GPU's
--               priority-fusion log, text entries under a "priority fusion" head say why it
--               was or was not fused (the reply's `fusion`).
-- The server does the work; this module asks and shows. Neovim 0.7+.
local compat = require('hlo_lsp.compat')

local M = {}

M.PASS_HISTORY = 'hlo/passHistory'
M.PASS_BLAME = 'hlo/passBlame'
M.PASS_HISTORY_CHANGED = 'hlo/passHistoryChanged'

--- buffer number of a timeline -> { snapshots, rows, lines = { [row of the buffer] = row },
--- uri (the document asked about), directory (its dump directory), client_id }
M.timelines = {}
--- The last `hlo/passBlame` reply, for tests and :lua inspection.
M.last_blame = nil

local function str(v)
  return type(v) == 'string' and v or ''
end

local function count(v)
  return type(v) == 'number' and tostring(v) or ''
end

--- The lines of a timeline from the `hlo/passHistory` reply, and the row each line shows.
function M.timeline_lines(reply)
  local lines = {
    string.format('%s: %d files (before, pass snapshots, after) in %s', str(reply.module),
      #reply.snapshots, str(reply.directory)),
    string.format('  %-9s %-44s %5s %7s %7s  %s', 'step', 'pipeline: pass', 'added', 'removed',
      'changed', 'appeared (+) / vanished (-)'),
  }
  local at = {}
  for _, row in ipairs(reply.rows) do
    local counts
    if row['end'] then
      counts = string.format('%5s instructions', count(row.instructions))
    else
      counts = string.format('%5s %7s %7s  %s', count(row.added), count(row.removed),
        count(row.changed), str(row.notes))
    end
    table.insert(lines, (string.format('  %-9s %-44s %s', str(row.step), str(row.label), counts)
      :gsub('%s+$', '')))
    at[#lines] = row
  end
  if type(reply.quiet) == 'number' and reply.quiet > 0 then
    table.insert(lines, string.format('  (%d snapshot%s changed nothing)', reply.quiet,
      reply.quiet == 1 and '' or 's'))
  end
  table.insert(lines, '')
  table.insert(lines, '<CR> on a row: the diff of that step (the snapshot before it and its own)')
  return lines, at
end

local function path_of(snapshot)
  return snapshot and type(snapshot.uri) == 'string' and vim.uri_to_fname(snapshot.uri) or nil
end

--- The files of a row's diff: (left, right); left nil for the first file.
function M.diff_files(timeline, row)
  local snaps = timeline.snapshots
  local left = type(row.previous) == 'number' and snaps[row.previous + 1] or nil
  return path_of(left), path_of(snaps[row.last + 1])
end

--- Opens the step of the timeline row under the cursor: a new tab with :diffsplit of the
--- two snapshots (the file alone for the first).
function M.open_row(bufnr, lnum)
  local timeline = M.timelines[compat.buf(bufnr)]
  local row = timeline and timeline.lines[lnum or vim.api.nvim_win_get_cursor(0)[1]]
  if row == nil then
    return false
  end
  local left, right = M.diff_files(timeline, row)
  if right == nil then
    return false
  end
  if left == nil then
    vim.cmd('tabnew ' .. vim.fn.fnameescape(right))
  else
    vim.cmd('tabnew ' .. vim.fn.fnameescape(left))
    vim.cmd('vertical diffsplit ' .. vim.fn.fnameescape(right))
  end
  return true
end

--- The timeline buffer `buf` drawn anew from an `hlo/passHistory` reply (no history left:
--- its message), in place: windows, cursor and focus stay.
local function redraw(buf, reply)
  local timeline = M.timelines[buf]
  if timeline == nil or not vim.api.nvim_buf_is_valid(buf) then
    return
  end
  local lines, at = { str(reply.message), '' }, {}
  if #reply.rows > 0 then
    lines, at = M.timeline_lines(reply)
  end
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, 0, -1, false, lines)
  vim.bo[buf].modifiable = false
  vim.bo[buf].modified = false
  timeline.snapshots, timeline.rows, timeline.lines = reply.snapshots, reply.rows, at
end

--- `hlo/passHistoryChanged` (the server's handler, init.lua): every timeline of that dump
--- directory asked again and redrawn.
function M.on_history_changed(_, params, ctx)
  local directory = type(params) == 'table' and params.directory or nil
  if type(directory) ~= 'string' then
    return
  end
  for buf, timeline in pairs(M.timelines) do
    local client = timeline.directory == directory and ctx and ctx.client_id == timeline.client_id
      and vim.lsp.get_client_by_id(timeline.client_id)
    if client then
      local params_ = { textDocument = { uri = timeline.uri } }
      compat.client_call(client, 'request', M.PASS_HISTORY, params_, function(err, reply)
        if not err and type(reply) == 'table' and type(reply.rows) == 'table' then
          redraw(buf, reply)
        end
      end)
    end
  end
end

--- The client's handlers with this module's (`handlers` from the setup wins).
function M.handlers(handlers)
  return vim.tbl_extend('keep', handlers or {}, { [M.PASS_HISTORY_CHANGED] = M.on_history_changed })
end

--- :HloPasses — the timeline of the buffer's module in a scratch buffer (a split).
--- `callback(err, reply)` gets the server's answer.
function M.history(bufnr, callback)
  bufnr = compat.buf(bufnr)
  local client = require('hlo_lsp').attached_client(bufnr)
  if client == nil then
    return false
  end
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) } }
  compat.client_call(client, 'request', M.PASS_HISTORY, params, function(err, reply)
    if err or type(reply) ~= 'table' or type(reply.rows) ~= 'table' then
      compat.notify(M.PASS_HISTORY .. ' failed: ' .. tostring(err and err.message or reply),
        vim.log.levels.ERROR)
    elseif #reply.rows == 0 then
      compat.notify(str(reply.message), vim.log.levels.WARN)
    else
      local lines, at = M.timeline_lines(reply)
      local buf, win = require('hlo_lsp.views').show_scratch(
        'hlo-passes://' .. str(reply.module), lines, nil, 'botright')
      vim.bo[buf].bufhidden = 'wipe'
      vim.wo[win].wrap = false
      M.timelines[buf] = { snapshots = reply.snapshots, rows = reply.rows, lines = at,
        uri = params.textDocument.uri, client_id = client.id,
        directory = vim.fn.fnamemodify(vim.uri_to_fname(params.textDocument.uri), ':h') }
      vim.api.nvim_create_autocmd('BufWipeout', {
        buffer = buf, once = true, callback = function() M.timelines[buf] = nil end })
      vim.keymap.set('n', '<CR>', function() M.open_row(buf) end,
        { buffer = buf, desc = 'hlo-lsp: the diff of this pass' })
      for lnum in pairs(at) do -- the cursor on the first pass (after the before row)
        if lnum > 3 then
          vim.api.nvim_win_set_cursor(0, { lnum, 0 })
          break
        end
      end
    end
    if callback then
      callback(err, reply)
    end
  end, bufnr)
  return true
end

local function qf_item(place, what)
  local range = place.location and place.location.range
  return {
    filename = vim.uri_to_fname(place.location.uri),
    lnum = range.start.line + 1,
    col = range.start.character + 1,
    text = what .. ' ' .. str(place.words),
  }
end

--- The quickfix entries (text only) of the blame's priority-fusion decisions (`reply.fusion`):
--- a head naming the log and the instruction's name there, one entry per decision; {}
--- without them. The lines are the server's plain text (control characters escaped).
function M.fusion_items(reply)
  local fusion = type(reply) == 'table' and reply.fusion or nil
  if type(fusion) ~= 'table' or type(fusion.decisions) ~= 'table' then
    return {}
  end
  local items = { {
    text = string.format('priority fusion (%s), where it is %%%s:', str(fusion.file), str(fusion.name)),
  } }
  for _, line in ipairs(fusion.decisions) do
    if type(line) == 'string' then
      table.insert(items, { text = '  ' .. line })
    end
  end
  return #items > 1 and items or {}
end

--- :HloBlame — the pass that created the instruction under the cursor: its first
--- appearance opened (the cursor on its name), the quickfix list filled with it and
--- each pass that changed it since, then why priority fusion fused it or did not
--- (M.fusion_items). `callback(err, reply)` gets the server's answer.
function M.blame(bufnr, callback)
  bufnr = compat.buf(bufnr)
  local client = require('hlo_lsp').attached_client(bufnr)
  if client == nil then
    return false
  end
  local encoding = client.offset_encoding or 'utf-16'
  local params = vim.lsp.util.make_position_params(0, encoding)
  compat.client_call(client, 'request', M.PASS_BLAME, params, function(err, reply)
    M.last_blame = reply
    local created = type(reply) == 'table' and reply.createdBy or nil
    if err or type(created) ~= 'table' then
      compat.notify(err and (M.PASS_BLAME .. ' failed: ' .. tostring(err.message))
        or str(type(reply) == 'table' and reply.message), vim.log.levels.WARN)
    else
      local items = { qf_item(created, 'created by') }
      for _, place in ipairs(type(reply.changedBy) == 'table' and reply.changedBy or {}) do
        table.insert(items, qf_item(place, 'changed by'))
      end
      local fused = M.fusion_items(reply)
      vim.list_extend(items, fused)
      vim.fn.setqflist({}, ' ', { title = str(reply.message), items = items })
      compat.jump(created.location, encoding)
      local note = str(reply.message)
      if #fused > 0 then
        note = note .. '; priority fusion: ' .. vim.trim(fused[2].text)
          .. (#fused > 2 and string.format(' (+%d more in the quickfix list)', #fused - 2) or '')
      end
      compat.notify(note, vim.log.levels.INFO)
    end
    if callback then
      callback(err, reply)
    end
  end, bufnr)
  return true
end

function M.create_commands()
  vim.api.nvim_create_user_command('HloPasses', function()
    M.history(0)
  end, { desc = 'hlo-lsp: the pass history of this module (<CR> on a pass: its diff)' })
  vim.api.nvim_create_user_command('HloBlame', function()
    M.blame(0)
  end, { desc = 'hlo-lsp: go to the first appearance of the instruction under the cursor' })
end

return M
