-- hlo-lsp for Neovim: starts the HLO language server for `hlo` buffers, hides
-- metadata inline, and defines :HloToggleMetadata, :HloRecompile [target], :HloRestart and
-- the views :HloReadable[!], :HloSummary, :HloCompare, :HloCounterpart (views.lua) and
-- :HloProfile [dir] (profile.lua), :HloPasses and :HloBlame (passes.lua).
--
--   require('hlo_lsp').setup({})   -- every option is optional, see M.defaults
--
-- Neovim 0.11+: vim.lsp.config + vim.lsp.enable.
-- Neovim 0.8-0.10: vim.lsp.start from a FileType autocmd.
-- Neovim 0.7: vim.lsp.start_client + vim.lsp.buf_attach_client from a FileType autocmd.
local compat = require('hlo_lsp.compat')
local inline = require('hlo_lsp.inline')
local filetype = require('hlo_lsp.filetype')
local views = require('hlo_lsp.views')
local keymaps = require('hlo_lsp.keymaps')
local folding = require('hlo_lsp.folding')
local profile = require('hlo_lsp.profile')
local passes = require('hlo_lsp.passes')
local kernels = require('hlo_lsp.kernels')

local M = {}

--- Name of the LSP client (and of the vim.lsp.config / lspconfig entry).
M.name = 'hlo_lsp'

M.defaults = {
  -- Command starting the server on stdio, e.g. { 'python', '-m', 'hlo_lsp' }.
  cmd = { 'hlo-lsp' },
  filetypes = { 'hlo' },
  -- The workspace root is the nearest ancestor holding one of these (tried in
  -- order); without one, the file's own directory (a dump directory).
  root_markers = { '.git', 'pyproject.toml', 'setup.py' },
  -- Hide the `metadata_kinds` ranges of `hlo/inlineRegions` when a buffer opens.
  metadata_hidden = true,
  -- Any of 'metadata', 'backend_config', 'frontend_attributes'.
  metadata_kinds = { 'metadata' },
  -- One character shown in place of each hidden range (e.g. '⋯'); nil: nothing.
  marker = nil,
  -- Set 'concealcursor' (e.g. 'nc') while hiding, to hide on the cursor line too.
  concealcursor = nil,
  -- Delay before asking for new regions after an edit (ms).
  debounce_ms = 300,
  -- Turn 'wrap' off in windows while metadata is hidden (wrapping counts the
  -- hidden text: blank rows, words broken in two); restored when shown.
  nowrap = true,
  -- Buffer-local maps on attach (see lua/hlo_lsp/keymaps.lua). nil: the running
  -- version's convention (0.11+: `gd` only, Neovim maps K/grr/gra/grn itself;
  -- older: K, gd, gr, <leader>ca). false: none. A table changes single maps:
  -- { references = 'gR', code_action = false }.
  keymaps = nil,
  -- Fold computations from the server's folding ranges ('foldexpr'; 0.11+:
  -- vim.lsp.foldexpr()). false: leave the fold options alone.
  folding = true,
  -- Directory (or list) that relative Python paths in the dump's metadata are
  -- relative to (the server's `sourceRoot`); tried before the recipe's
  -- directories, the dump directory and its parents, the workspace root and
  -- its parents, the server's working directory.
  source_root = nil,
  -- Where :HloRecompile runs the program (issue 16): the `hlo.recompile.launcher`
  -- setting, e.g. { preset = 'slurm', args = { '--gpus=1', '--partition=gpu' } },
  -- { preset = 'ssh', host = 'gpu-box' } or { argv = { 'srun', '{command}' } }.
  launcher = nil,
  -- Accelerator of the cost estimates (hover, summary, recompile report): one of
  -- 'h100-sxm', 'h100-pcie', 'a100-sxm-80gb', 'b200', 'l4', 'tpu-v5e', 'cpu' (the
  -- server's `device`). nil: the one the dump's file name implies, else 'cpu'.
  device = nil,
  -- Directory holding the profiles of jax.profiler whose measured times hover and the
  -- code lens show (the server's `profile`): a dump directory, a folder holding
  -- plugins/profile/<run>/, or one run. nil: beside each dump. :HloProfile [dir]
  -- loads another run.
  profile = nil,
  -- How :HloGraph opens the page it writes: nil uses vim.ui.open (0.10+) or
  -- xdg-open; a function(path) does it your way (raising an error or returning
  -- false: no browser, the text view opens instead).
  graph_opener = nil,
  -- Start the server automatically. false: only register the config (for
  -- nvim-lspconfig or your own vim.lsp.enable call).
  autostart = true,
  -- Register `hlo_lsp` in nvim-lspconfig's configs when it is installed
  -- (Neovim < 0.11; on 0.11+ the plugin's lsp/hlo_lsp.lua serves vim.lsp.config).
  lspconfig = true,
  -- Passed to the LSP client as they are.
  on_attach = nil,
  capabilities = nil,
  settings = nil,
  init_options = nil,
  handlers = nil,
  flags = nil,
  cmd_cwd = nil,
  cmd_env = nil,
}

M.config = vim.deepcopy(M.defaults)

--- 'config' (0.11+), 'start' (0.8+) or 'start_client' (0.7). Set by setup().
M.mode = nil

local clients_by_root = {} -- start_client mode: root_dir -> client id

local function pick_mode(requested)
  if requested then
    return requested
  end
  if vim.lsp.config and vim.lsp.enable and compat.nvim_0_11 then
    return 'config'
  elseif vim.lsp.start then
    return 'start'
  end
  return 'start_client'
end

--- Workspace root for `bufnr` (nil for unnamed buffers).
function M.root_dir(bufnr)
  local name = vim.api.nvim_buf_get_name(bufnr)
  if name == '' then
    return nil
  end
  return compat.find_root(name, M.config.root_markers) or vim.fn.fnamemodify(name, ':p:h')
end

--- on_attach used for every hlo-lsp client; calls the user's on_attach after.
function M.on_attach(client, bufnr)
  if kernels.is_kernel_buffer(bufnr) then -- a kernel's PTX / LLVM IR (kernels.lua)
    kernels.attach(bufnr, client, M.config.keymaps)
    if M.config.on_attach then
      M.config.on_attach(client, bufnr)
    end
    return
  end
  inline.attach(bufnr, client)
  keymaps.attach(bufnr, M.config.keymaps)
  if M.config.folding then
    folding.attach(bufnr, client)
  end
  if M.config.on_attach then
    M.config.on_attach(client, bufnr)
  end
end

--- The client config (start_client / vim.lsp.start form).
function M.client_config(root_dir)
  local c = M.config
  local cmd = c.cmd
  if type(cmd) == 'string' then
    cmd = { cmd }
  end
  -- Neovim answers workspace/configuration (from `settings`) since 0.5 but
  -- announces it only since 0.8: without it the server never asks for the
  -- hlo.recompile settings.
  local capabilities = c.capabilities or vim.lsp.protocol.make_client_capabilities()
  if not (capabilities.workspace and capabilities.workspace.configuration) then
    capabilities = vim.deepcopy(capabilities)
    capabilities.workspace = capabilities.workspace or {}
    capabilities.workspace.configuration = true
  end
  local init_options = c.init_options
  if c.source_root ~= nil then
    init_options = vim.tbl_extend('force', init_options or {}, { sourceRoot = c.source_root })
  end
  if c.device ~= nil then
    init_options = vim.tbl_extend('force', init_options or {}, { device = c.device })
  end
  if c.profile ~= nil and c.profile ~= '' then
    init_options = vim.tbl_extend('force', init_options or {}, { profile = profile.directory(c.profile) })
  end
  local settings = c.settings or {}
  if c.launcher ~= nil then
    -- Both: the initialization options (the code action's title) and the
    -- workspace/configuration answer for `hlo.recompile` (each run).
    init_options = vim.tbl_deep_extend('force', init_options or {}, { recompile = { launcher = c.launcher } })
    settings = vim.tbl_deep_extend('force', settings, { hlo = { recompile = { launcher = c.launcher } } })
  end
  return {
    name = M.name,
    cmd = cmd,
    root_dir = root_dir,
    capabilities = capabilities,
    settings = settings,
    init_options = init_options,
    handlers = passes.handlers(c.handlers), -- hlo/passHistoryChanged (passes.lua)
    flags = c.flags,
    cmd_cwd = c.cmd_cwd,
    cmd_env = c.cmd_env,
    on_attach = function(client, bufnr)
      M.on_attach(client, bufnr)
    end,
  }
end

--- The hlo-lsp client attached to `bufnr`, if any.
function M.get_client(bufnr)
  return compat.running_client(bufnr, M.name)
end

--- The hlo-lsp client of `bufnr` for a command the user gave there; nil, with a
--- message saying so, when none is attached.
function M.attached_client(bufnr)
  local client = M.get_client(bufnr)
  if client == nil then
    compat.notify('no hlo-lsp client is attached to this buffer', vim.log.levels.WARN)
  end
  return client
end

local function is_hlo_buffer(bufnr)
  return vim.api.nvim_buf_is_loaded(bufnr)
    and vim.bo[bufnr].buftype == ''
    and vim.tbl_contains(M.config.filetypes, vim.bo[bufnr].filetype)
end

--- Start (attach) the server for every HLO buffer already open.
local function start_open_buffers()
  for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
    if is_hlo_buffer(bufnr) then
      M.start_buffer(bufnr)
    end
  end
end

--- Start (or reuse) a client for `bufnr` and attach it.
function M.start_buffer(bufnr)
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  if not vim.api.nvim_buf_is_valid(bufnr) or not (is_hlo_buffer(bufnr) or kernels.is_kernel_buffer(bufnr)) then
    return nil
  end
  local root = M.root_dir(bufnr)
  if root == nil then
    return nil
  end
  local mode = M.mode or pick_mode()
  local ok, res
  if mode == 'config' then
    local config = vim.deepcopy(vim.lsp.config[M.name] or M.client_config(root))
    config.name = M.name
    config.root_dir = root
    ok, res = pcall(vim.lsp.start, config, { bufnr = bufnr })
  elseif mode == 'start' then
    local config = M.client_config(root)
    ok, res = pcall(vim.api.nvim_buf_call, bufnr, function()
      return vim.lsp.start(config, { bufnr = bufnr })
    end)
  else
    local id = clients_by_root[root]
    local client = id and vim.lsp.get_client_by_id(id)
    if client == nil or compat.client_is_stopped(client) then
      ok, id = pcall(vim.lsp.start_client, M.client_config(root))
      if not ok or id == nil then
        compat.notify('could not start ' .. table.concat(M.client_config(root).cmd, ' ') .. ': ' .. tostring(id), vim.log.levels.ERROR)
        return nil
      end
      clients_by_root[root] = id
    end
    ok, res = pcall(vim.lsp.buf_attach_client, bufnr, id)
    res = id
  end
  if not ok then
    compat.notify('could not start the server: ' .. tostring(res), vim.log.levels.ERROR)
    return nil
  end
  return res
end

-- ------------------------------------------------------------------ commands

--- :HloToggleMetadata [hide|show|toggle]
function M.toggle_metadata(action)
  if action == 'hide' then
    inline.set_hidden(true)
  elseif action == 'show' then
    inline.set_hidden(false)
  else
    inline.toggle()
  end
  return inline.is_hidden()
end

--- The fields of the `hlo.recompile` reply the plugin reads (the contract is
--- RecompileReply in hlo_lsp/lsp/messages.py; the tests check these against
--- the real server's reply).
M.RECOMPILE_FIELDS = { 'ok', 'cancelled', 'error', 'summary' }

--- The report of a `hlo.recompile` reply, several lines, and its log level.
function M.recompile_report(result)
  if type(result) ~= 'table' then
    return 'hlo.recompile: no result', vim.log.levels.WARN
  end
  local text = type(result.summary) == 'string' and result.summary ~= '' and result.summary
    or type(result.error) == 'string' and result.error
    or 'done'
  local level = result.ok == true and vim.log.levels.INFO
    or result.cancelled == true and vim.log.levels.WARN
    or vim.log.levels.ERROR
  return text, level
end

--- The last `hlo.recompile` reply (for tests and :lua inspection).
M.last_recompile = nil

--- The target GPUs the server compiles for without one (its built-in targets,
--- hlo_lsp/dump/targets/*.txtpb; a test checks the list against them).
M.RECOMPILE_TARGETS = { 'h100', 'a100', 'b200', 'l4' }
--- The device platforms a recompile can run on (`hlo.recompile.platform`).
M.RECOMPILE_PLATFORMS = { 'cpu', 'gpu', 'cuda', 'rocm', 'tpu' }

--- The `hlo.recompile` options of :HloRecompile's argument: nil for none (the
--- plain recompile), { platform = P } for a device platform (`cpu`, `gpu`, ...),
--- else { target = T } (a target GPU such as `h100`, or a GpuTargetConfig file):
--- the second argument the code actions pass, `[uri, {"target": "h100"}]`.
---@param arg string|nil
---@return table|nil
function M.recompile_options(arg)
  arg = vim.trim(arg or '')
  if arg == '' then
    return nil
  end
  if vim.tbl_contains(M.RECOMPILE_PLATFORMS, arg:lower()) then
    return { platform = arg:lower() }
  end
  return { target = arg }
end

--- Completion of :HloRecompile's argument: the targets and the platforms `cpu`
--- and `gpu`, then file names (a GpuTargetConfig file) once it looks like a path.
function M.complete_recompile(lead)
  if lead:find('/', 1, true) or lead:sub(1, 1) == '~' or lead:sub(1, 1) == '.' then
    return vim.fn.getcompletion(lead, 'file')
  end
  local out = {}
  for _, word in ipairs(vim.list_extend(vim.deepcopy(M.RECOMPILE_TARGETS), { 'cpu', 'gpu' })) do
    if word:sub(1, #lead) == lead:lower() then
      table.insert(out, word)
    end
  end
  return out
end

--- :HloRecompile [target] — workspace/executeCommand `hlo.recompile` with the
--- buffer's uri, and `options` when given: arguments `[uri]`, `[uri, {target = T}]`
--- or `[uri, {platform = P}]`, exactly as the server's code actions send them.
---@param bufnr integer|nil
---@param callback fun(err, result)|nil called with the server's answer
---@param options table|nil { target = T } or { platform = P } (see M.recompile_options)
function M.recompile(bufnr, callback, options)
  if bufnr == nil or bufnr == 0 then
    bufnr = vim.api.nvim_get_current_buf()
  end
  local client = M.attached_client(bufnr)
  if client == nil then
    return false
  end
  local arguments = { vim.uri_from_bufnr(bufnr) }
  if type(options) == 'table' and next(options) ~= nil then
    table.insert(arguments, options)
  end
  local params = { command = 'hlo.recompile', arguments = arguments }
  compat.client_call(client, 'request', 'workspace/executeCommand', params, function(err, result)
    if callback then
      callback(err, result)
    end
    if err then
      compat.notify('hlo.recompile failed: ' .. tostring(err.message or vim.inspect(err)), vim.log.levels.ERROR)
      return
    end
    M.last_recompile = result
    local text, level = M.recompile_report(result)
    compat.notify('recompile\n' .. text, level)
    M.reload_dump_buffers()
    M.show_experiment(result)
  end, bufnr)
  return true
end

--- After an experiment with a flag (`hlo.recompile` with `{experiment, line}`): the
--- variant's file at the instruction's counterpart, when the server could not show
--- it (Neovim without window/showDocument, 0.7).
---@param result table the `hlo.recompile` reply
function M.show_experiment(result)
  local exp = type(result) == 'table' and result.experiment
  if type(exp) ~= 'table' or type(exp.variantFile) ~= 'string' then
    return
  end
  if type(result.shownDocuments) == 'table' and #result.shownDocuments > 0 then
    return
  end
  vim.cmd('edit ' .. vim.fn.fnameescape(exp.variantFile))
  if type(exp.line) == 'number' then
    pcall(vim.api.nvim_win_set_cursor, 0, { exp.line + 1, 0 })
  end
end

--- Reload (:checktime) every unmodified HLO buffer whose file changed on disk:
--- a recompile rewrites the dump directory, whichever way it was started.
function M.reload_dump_buffers()
  for _, b in ipairs(vim.api.nvim_list_bufs()) do
    if is_hlo_buffer(b) and not vim.bo[b].modified then
      pcall(vim.cmd, 'checktime ' .. b)
    end
  end
end

--- :HloRestart — stop every hlo-lsp client, then start again for the open buffers.
---@param callback fun()|nil called once the new clients were started
function M.restart(callback)
  local clients = compat.get_clients({ name = M.name })
  for _, client in ipairs(clients) do
    pcall(compat.client_call, client, 'stop')
  end
  local start = compat.uv.now()
  local timer = compat.uv.new_timer()
  local forced = false
  timer:start(
    50,
    50,
    vim.schedule_wrap(function()
      local alive = false
      for _, client in ipairs(clients) do
        if not compat.client_is_stopped(client) then
          alive = true
        end
      end
      if alive and compat.uv.now() - start > 3000 and not forced then
        forced = true
        for _, client in ipairs(clients) do
          pcall(compat.client_call, client, 'stop', true)
        end
      end
      if alive and compat.uv.now() - start < 6000 then
        return
      end
      timer:stop()
      timer:close()
      clients_by_root = {}
      for _, bufnr in ipairs(vim.api.nvim_list_bufs()) do
        if is_hlo_buffer(bufnr) or kernels.is_kernel_buffer(bufnr) then
          M.start_buffer(bufnr)
        end
      end
      if callback then
        callback()
      end
    end)
  )
end

local function create_commands()
  vim.api.nvim_create_user_command('HloToggleMetadata', function(args)
    local hidden = M.toggle_metadata(args.args ~= '' and args.args or nil)
    if args.args == '' then
      compat.notify(hidden and 'metadata hidden' or 'metadata shown')
    end
  end, {
    nargs = '?',
    complete = function()
      return { 'hide', 'show', 'toggle' }
    end,
    desc = 'hlo-lsp: hide or show metadata inline',
  })
  vim.api.nvim_create_user_command('HloRecompile', function(args)
    M.recompile(0, nil, M.recompile_options(args.args))
  end, {
    nargs = '?',
    complete = function(lead)
      return M.complete_recompile(lead)
    end,
    desc = 'hlo-lsp: re-run the JAX program that produced this dump [for a target GPU, or on a platform]',
  })
  vim.api.nvim_create_user_command('HloRestart', function()
    M.restart()
  end, { desc = 'hlo-lsp: restart the language server' })
  views.create_commands()
  views.register_lsp_commands()
  profile.create_commands()
  passes.create_commands()
  -- The code action's command runs here too (vim.lsp.commands come before the
  -- server's executeCommand): the same report and reload as :HloRecompile, with
  -- the action's options (`[uri, {"target": "h100"}]`) passed on whole.
  vim.lsp.commands['hlo.recompile'] = function(command, ctx)
    local bufnr = ctx and ctx.bufnr or 0
    local arguments = command.arguments or {}
    local arg = arguments[1]
    local uri = type(arg) == 'table' and arg.uri or arg
    if type(uri) == 'string' then
      bufnr = vim.uri_to_bufnr(uri)
    end
    local options = arguments[2]
    M.recompile(bufnr, nil, type(options) == 'table' and options or nil)
  end
end

-- The views (views.lua): readable view, kernel summary, comparison, counterpart, the
-- pictures as text.
M.readable = views.readable
M.summary = views.summary
M.compare = views.compare
M.counterpart = views.counterpart
M.graph_text = views.graph_text
M.memory_text = views.memory_text
-- Measured profiles (profile.lua): :HloProfile [dir].
M.profile = profile.profile
M.load_profile = profile.load
-- The pass history (passes.lua): :HloPasses, :HloBlame.
M.passes = passes.history
M.blame = passes.blame

-- ------------------------------------------------------------------ lspconfig

local function register_lspconfig()
  if compat.nvim_0_11 then
    return false -- vim.lsp.config is the registry (and lsp/hlo_lsp.lua)
  end
  if not package.loaded['lspconfig'] and not package.loaded['lspconfig.configs'] then
    -- Only look for it when it is installed; never require it to exist.
    if #vim.api.nvim_get_runtime_file('lua/lspconfig/configs.lua', false) == 0 then
      return false
    end
  end
  local ok, configs = pcall(require, 'lspconfig.configs')
  if not ok or type(configs) ~= 'table' then
    return false
  end
  if configs[M.name] == nil then
    configs[M.name] = {
      default_config = {
        cmd = M.client_config(nil).cmd,
        filetypes = M.config.filetypes,
        root_dir = function(fname)
          return compat.find_root(fname, M.config.root_markers) or vim.fn.fnamemodify(fname, ':p:h')
        end,
        single_file_support = true,
        settings = M.config.settings or {},
        init_options = M.client_config(nil).init_options,
        on_attach = function(client, bufnr)
          M.on_attach(client, bufnr)
        end,
      },
      docs = {
        description = 'hlo-lsp: language server for XLA HLO text (editors/nvim in the hlo-lsp repository).',
      },
    }
  end
  return true
end

-- ------------------------------------------------------------------ setup

local setup_done = false

---@param opts table|nil see M.defaults
function M.setup(opts)
  opts = opts or {}
  local config = vim.deepcopy(M.defaults)
  for k, v in pairs(opts) do
    if k ~= '_mode' then
      config[k] = v -- shallow: lists such as cmd are replaced, not merged
    end
  end
  M.config = config
  M.mode = pick_mode(opts._mode)

  filetype.register()
  inline.configure({
    hidden = config.metadata_hidden,
    kinds = config.metadata_kinds,
    marker = config.marker or '',
    concealcursor = config.concealcursor,
    debounce_ms = config.debounce_ms,
    nowrap = config.nowrap,
    client_name = M.name,
  })
  create_commands()

  local group = vim.api.nvim_create_augroup('hlo_lsp', { clear = true })
  if vim.fn.exists('##LspAttach') == 1 then
    -- Safety net when another config replaced our on_attach.
    vim.api.nvim_create_autocmd('LspAttach', {
      group = group,
      callback = function(args)
        local client = args.data and vim.lsp.get_client_by_id(args.data.client_id)
        if client and client.name == M.name and not kernels.is_kernel_buffer(args.buf) then
          inline.attach(args.buf, client)
        end
      end,
    })
  end

  if config.lspconfig then
    pcall(register_lspconfig)
  end

  if M.mode == 'config' then
    local c = M.client_config(nil)
    vim.lsp.config(M.name, {
      cmd = c.cmd,
      filetypes = config.filetypes,
      root_markers = config.root_markers,
      root_dir = function(bufnr, on_dir)
        local root = M.root_dir(bufnr)
        if root then
          on_dir(root)
        end
      end,
      capabilities = c.capabilities,
      settings = c.settings,
      init_options = c.init_options,
      handlers = c.handlers,
      flags = c.flags,
      cmd_cwd = c.cmd_cwd,
      cmd_env = c.cmd_env,
      on_attach = c.on_attach,
    })
    if config.autostart then
      vim.lsp.enable(M.name)
      if vim.v.vim_did_enter ~= 1 then
        -- vim.lsp.enable only visits open buffers after VimEnter.
        start_open_buffers()
      end
    end
  elseif config.autostart then
    vim.api.nvim_create_autocmd('FileType', {
      group = group,
      pattern = config.filetypes,
      callback = function(args)
        M.start_buffer(args.buf)
      end,
    })
    start_open_buffers()
  end
  if config.autostart then
    -- The kernels' PTX and LLVM IR of a dump: definition and hover only (kernels.lua).
    kernels.register(group, M.start_buffer, function(bufnr)
      return M.get_client(bufnr) ~= nil
    end)
  end
  setup_done = true
  return M
end

function M.is_setup()
  return setup_done
end

return M
