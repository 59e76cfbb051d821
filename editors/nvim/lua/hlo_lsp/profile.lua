-- Measured profiles (docs/protocol.md, "Profiles"): :HloProfile [dir] asks the server
-- for the runs of jax.profiler in `dir` or near the buffer's dump (`hlo/profileRuns`),
-- lets the user pick one of several (vim.ui.select, newest first), then runs the server
-- command `hlo.loadProfile`, whose message the server shows. Hover and the code lens then show the
-- measured times. The server does the work; this module asks and shows. Neovim 0.7+.
local compat = require('hlo_lsp.compat')

local M = {}

M.PROFILE_RUNS = 'hlo/profileRuns'
M.LOAD_PROFILE = 'hlo.loadProfile'

--- The last `hlo.loadProfile` reply ({ run, message }), for tests and :lua inspection.
M.last_load = nil

local function is_nil(v)
  return v == nil or v == vim.NIL
end

--- A directory argument as the server wants it: nil for none, else absolute with `~`
--- expanded.
function M.directory(arg)
  arg = vim.trim(arg or '')
  if arg == '' then
    return nil
  end
  return (vim.fn.fnamemodify(vim.fn.expand(arg), ':p'):gsub('(.)/$', '%1'))
end

--- The `hlo/profileRuns` result validated: { runs = {{path, name}...} (oldest first),
--- loaded = path|nil, message = string }, or nil.
function M.parse_runs(result)
  if type(result) ~= 'table' or type(result.runs) ~= 'table' then
    return nil
  end
  local runs = {}
  for _, r in ipairs(result.runs) do
    if type(r) == 'table' and type(r.path) == 'string' and type(r.name) == 'string' then
      table.insert(runs, { path = r.path, name = r.name })
    end
  end
  return {
    runs = runs,
    loaded = type(result.loaded) == 'string' and result.loaded or nil,
    message = type(result.message) == 'string' and result.message or '',
  }
end

--- `2026_11_29_06_10_12` -> `2026-11-29 06:10:12`; other names as they are.
function M.run_label(name)
  local y, mo, d, h, mi, s = name:match('^(%d%d%d%d)_(%d%d)_(%d%d)_(%d%d)_(%d%d)_(%d%d)$')
  if y == nil then
    return name
  end
  return string.format('%s-%s-%s %s:%s:%s', y, mo, d, h, mi, s)
end

--- The runs newest first, as vim.ui.select shows them.
function M.choices(found)
  local out = {}
  for i = #found.runs, 1, -1 do
    table.insert(out, found.runs[i])
  end
  return out
end

function M.format_run(found)
  return function(run)
    local notes = {}
    if run == found.runs[#found.runs] then
      table.insert(notes, 'newest')
    end
    if run.path == found.loaded then
      table.insert(notes, 'loaded now')
    end
    local label = M.run_label(run.name)
    if #notes > 0 then
      label = label .. ' (' .. table.concat(notes, ', ') .. ')'
    end
    return label .. '  ' .. run.path
  end
end

--- `hlo.loadProfile` for `bufnr` with `path` (a run or a directory of runs; nil: the
--- newest near the dump). The server shows its message (window/showMessage, a warning
--- when nothing was loaded), which Neovim displays; the reply is kept in M.last_load.
function M.load(bufnr, path, callback)
  bufnr = compat.buf(bufnr)
  local client = require('hlo_lsp').attached_client(bufnr)
  if client == nil then
    return false
  end
  local argument = { uri = vim.uri_from_bufnr(bufnr), path = path }
  local params = { command = M.LOAD_PROFILE, arguments = { argument } }
  compat.client_call(client, 'request', 'workspace/executeCommand', params, function(err, result)
    if err then
      compat.notify(M.LOAD_PROFILE .. ' failed: ' .. tostring(err.message or vim.inspect(err)), vim.log.levels.ERROR)
    elseif type(result) == 'table' then
      M.last_load = { run = not is_nil(result.run) and result.run or nil, message = result.message }
    end
    if callback then
      callback(err, result)
    end
  end, bufnr)
  return true
end

--- :HloProfile [dir] — the runs in `dir` (else near the buffer's dump, or in the
--- `profile` setting); one of several chosen with vim.ui.select (newest first); then
--- `hlo.loadProfile`. `callback(err, result)` gets the command's answer (not called
--- when the choice is dismissed).
function M.profile(bufnr, dir, callback)
  bufnr = compat.buf(bufnr)
  local client = require('hlo_lsp').attached_client(bufnr)
  if client == nil then
    return false
  end
  local params = { textDocument = { uri = vim.uri_from_bufnr(bufnr) }, path = dir }
  compat.client_call(client, 'request', M.PROFILE_RUNS, params, function(err, result)
    local found = not err and M.parse_runs(result) or nil
    if found == nil or #found.runs <= 1 then
      -- none: the command's message says so; one: nothing to choose
      return M.load(bufnr, found and found.runs[1] and found.runs[1].path or dir, callback)
    end
    vim.ui.select(M.choices(found), {
      prompt = string.format('%d profile runs, newest first: ', #found.runs),
      format_item = M.format_run(found),
    }, function(run)
      if run ~= nil then
        M.load(bufnr, run.path, callback)
      end
    end)
  end, bufnr)
  return true
end

function M.create_commands()
  vim.api.nvim_create_user_command('HloProfile', function(args)
    M.profile(0, M.directory(args.args))
  end, {
    nargs = '?',
    complete = 'dir',
    desc = 'hlo-lsp: load a profile of jax.profiler (the runs in [dir], else near the dump)',
  })
end

return M
