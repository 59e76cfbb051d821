-- Plugin checks that need no server:
--   HLO_TEST_SETUP=0 nvim --headless -u editors/nvim/tests/minimal_init.lua -c 'luafile editors/nvim/tests/test_unit.lua'
-- filetype detection, syntax groups, the inline conceal logic fed with fake
-- `hlo/inlineRegions` results, UTF-16 conversion, setup()/commands/lspconfig.
local H = dofile(vim.g.hlo_test_dir .. '/helpers.lua')
local api = vim.api

local function ft_of(path)
  vim.cmd('silent edit ' .. vim.fn.fnameescape(path))
  local ft = vim.bo.filetype
  vim.cmd('silent bwipeout!')
  return ft
end

local function test_filetype()
  local dir = H.tmpdir()
  local no_header = { '// no HloModule line here', 'ENTRY %main () -> f32[] {', '}' }
  local with_header = { 'HloModule jit_f, entry_computation_layout={()->f32[]}', '' }
  local positive = {
    { 'model.hlo', no_header },
    { 'module_0001.jit_f.before_optimizations.txt', no_header },
    { 'module_0001.jit_f.cpu_after_optimizations.txt', no_header },
    { 'module_0001.jit_f.sm_9.0_gpu_after_optimizations.txt', no_header },
    { 'module_0001.jit_f.gfx942_gpu_after_optimizations.txt', no_header },
    { '1700000000000.module_0002.jit_g.sm_9.0_gpu_after_optimizations.txt', no_header },
    { 'module_0001.jit_f.0004.simplification.after_dce.before_x.txt', no_header },
    { 'jit_matmul_fn.fp8_cublaslt.sm90_gpu_after_optimizations.txt', no_header },
    { 'anything.txt', with_header },
  }
  for _, case in ipairs(positive) do
    local path = H.write(dir .. '/' .. case[1], case[2])
    H.eq(ft_of(path), 'hlo', 'filetype hlo: ' .. case[1])
  end
  -- New (not yet existing) files.
  H.eq(ft_of(dir .. '/new_file.hlo'), 'hlo', 'filetype hlo: new *.hlo buffer')

  local negative = {
    -- Excluded by name even when the first line looks like HLO.
    { 'module_0001.jit_f.cpu_after_optimizations-buffer-assignment.txt', with_header },
    { 'module_0001.jit_f.cpu_after_optimizations-buffer-assignment.txt', { 'BufferAssignment:', 'allocation 0: size 4' } },
    { 'module_0001.jit_f.sm_9.0_gpu_after_optimizations-memory-usage-report.txt', with_header },
    { 'module_0001.jit_f.sm_9.0_gpu_after_optimizations-buffer-assignment-values.txt', with_header },
    { 'module_0001.jit_f.cpu_after_optimizations-live-range.txt', with_header },
    { 'notes.txt', { 'hello', 'HloModule on the second line does not count' } },
    { 'module_0001.jit_f.debug_options', { 'xla_dump_to: "/tmp"' } },
    { 'module_0001.jit_f.sm_9.0_gpu_after_optimizations.dot', { 'digraph G {', '}' } },
  }
  for i, case in ipairs(negative) do
    local sub = dir .. '/neg' .. i
    vim.fn.mkdir(sub, 'p')
    local path = H.write(sub .. '/' .. case[1], case[2])
    local ft = ft_of(path)
    H.check(ft ~= 'hlo', 'filetype not hlo: ' .. case[1] .. ' (' .. case[2][1] .. ')', 'got ' .. ft)
  end
  H.eq(ft_of(dir .. '/neg6/notes.txt'), 'text', 'plain *.txt stays text')

  local filetype = require('hlo_lsp.filetype')
  H.eq(filetype.match_name('/x/y/module_1.jit_f.before_optimizations.txt'), true, 'match_name before_optimizations')
  H.eq(filetype.match_name('/x/a-live-range.txt'), false, 'match_name live-range')
  H.eq(filetype.match_name('/x/a.txt'), nil, 'match_name plain txt defers to contents')
end

local function syn_at(row0, col0)
  return vim.fn.synIDattr(vim.fn.synID(row0 + 1, col0 + 1, 1), 'name')
end

local function test_syntax(dump)
  vim.cmd('silent edit ' .. vim.fn.fnameescape(dump))
  local b = api.nvim_get_current_buf()
  H.eq(vim.b.current_syntax, 'hlo', 'syntax/hlo.vim loaded')
  local function expect(needle, offset, group, start_row)
    local row, col = H.find(b, needle, start_row)
    if not H.check(row ~= nil, 'syntax: found ' .. needle) then
      return
    end
    H.eq(syn_at(row, col + (offset or 0)), group, 'syntax ' .. group .. ' at ' .. needle)
  end
  expect('HloModule', 0, 'hloModuleKeyword')
  expect('jit_matmul_fn,', 0, 'hloModuleName')
  expect('is_scheduled', 0, 'hloAttrName')
  expect('ENTRY', 0, 'hloKeyword')
  expect('ROOT', 0, 'hloKeyword')
  expect('%main.4', 1, 'hloComputationDef')
  expect('%wrapped_transpose_computation (', 1, 'hloComputationDef')
  expect('calls=%wrapped_transpose_computation', 7, 'hloComputationRef')
  expect('calls=', 0, 'hloCallAttr')
  expect('%cublas-gemm.1.0 =', 1, 'hloInstrDef')
  expect('ROOT %get-tuple-element.1', 6, 'hloInstrDef')
  expect('%Arg_0.1.0, f8e5m2', 1, 'hloInstrRef')
  expect('(param_0: ', 1, 'hloParamName')
  expect('custom-call(', 0, 'hloOpcode')
  expect('get-tuple-element(', 0, 'hloOpcode')
  expect('f8e4m3fn[128,128]{1,0} parameter(0)', 0, 'hloType')
  expect('f8e4m3fn[128,128]{1,0} parameter(0)', 8, 'hloDims')
  expect('f8e4m3fn[128,128]{1,0} parameter(0)', 18, 'hloLayout')
  expect('parameter(0)', 10, 'hloNumber')
  expect('/*index=5*/', 2, 'hloComment')
  expect('custom_call_target=', 0, 'hloAttrName')
  expect('"__cublas$lt$matmul$f8"', 1, 'hloString')
  expect('metadata={op_name="a"}', 0, 'hloMetadata')
  expect('metadata={op_name="a"}', 19, 'hloMetadataString')
  expect('backend_config=', 0, 'hloBackendConfigAttr')
  expect('"gemm_backend_config"', 1, 'hloJsonKey')
  expect('"DEFAULT"', 1, 'hloString')
  expect('kind=kInput', 5, 'hloConstant')
  H.eq(vim.fn.synIDattr(vim.fn.synIDtrans(vim.fn.hlID('hloMetadata')), 'name'), 'Comment', 'metadata links to Comment')
  vim.cmd('silent bwipeout!')
end

--- Fake `hlo/inlineRegions` results computed from the text: every
--- `, metadata={...}` and `, backend_config={...}` range (ASCII lines).
local function fake_regions(bufnr)
  local regions = {}
  local function balanced_end(s, open_at)
    local depth, i, in_str = 0, open_at, false
    while i <= #s do
      local ch = s:sub(i, i)
      if in_str then
        if ch == '\\' then
          i = i + 1
        elseif ch == '"' then
          in_str = false
        end
      elseif ch == '"' then
        in_str = true
      elseif ch == '{' then
        depth = depth + 1
      elseif ch == '}' then
        depth = depth - 1
        if depth == 0 then
          return i
        end
      end
      i = i + 1
    end
    return #s
  end
  for row, line in ipairs(api.nvim_buf_get_lines(bufnr, 0, -1, false)) do
    for _, kind in ipairs({ 'metadata', 'backend_config' }) do
      local s = line:find(', ' .. kind .. '={', 1, true)
      if s then
        local e = balanced_end(line, s + #kind + 3)
        table.insert(regions, {
          kind = kind,
          range = {
            start = { line = row - 1, character = s - 1 },
            ['end'] = { line = row - 1, character = e },
          },
        })
      end
    end
  end
  table.sort(regions, function(a, b)
    if a.range.start.line ~= b.range.start.line then
      return a.range.start.line < b.range.start.line
    end
    return a.range.start.character < b.range.start.character
  end)
  return regions
end

local function marks(bufnr, ns, row)
  local start = row and { row, 0 } or 0
  local stop = row and { row, -1 } or -1
  return api.nvim_buf_get_extmarks(bufnr, ns, start, stop, { details = true })
end

local function test_inline(dump)
  local inline = require('hlo_lsp.inline')
  inline.configure({ hidden = true, kinds = { 'metadata' }, marker = '' })
  local dir = H.tmpdir()
  local copy = dir .. '/' .. vim.fn.fnamemodify(dump, ':t')
  vim.fn.writefile(vim.fn.readfile(dump, 'b'), copy, 'b')
  vim.cmd('silent edit ' .. vim.fn.fnameescape(copy))
  local b = api.nvim_get_current_buf()
  local win = api.nvim_get_current_win()
  vim.wo.conceallevel = 1 -- the user's own value, to be restored
  vim.o.wrap = false
  vim.o.columns = 1200 -- the whole custom-call line fits on one screen row
  api.nvim_win_set_cursor(win, { 1, 0 })
  local before = api.nvim_buf_get_lines(b, 0, -1, false)

  local regions = fake_regions(b)
  local n_meta = 0
  for _, r in ipairs(regions) do
    if r.kind == 'metadata' then
      n_meta = n_meta + 1
    end
  end
  H.check(n_meta >= 5, 'fake regions computed', n_meta)

  inline.attach(b, nil)
  inline.apply(b, regions, 'utf-16')
  local gemm_row = H.find(b, '%cublas-gemm.1.0 =')
  local on_gemm = marks(b, inline.ns, gemm_row)
  H.eq(#on_gemm, 1, 'one conceal extmark on the custom-call line (metadata only)')
  -- Neovim 0.7 does not report `conceal` in the details; the screen check below covers it.
  local details = on_gemm[1] and on_gemm[1][4] or {}
  H.check(details.conceal == '' or (details.conceal == nil and vim.fn.has('nvim-0.8') == 0), 'extmark conceals with an empty string', vim.inspect(details))
  local line = before[gemm_row + 1]
  local hidden_text = on_gemm[1] and line:sub(on_gemm[1][3] + 1, on_gemm[1][4].end_col) or ''
  H.check(hidden_text:sub(1, 12) == ', metadata={' and hidden_text:sub(-1) == '}', 'the hidden text is the metadata attribute', hidden_text)
  H.eq(#marks(b, inline.ns), n_meta, 'one extmark per metadata region')
  H.eq(vim.wo.conceallevel, 2, 'conceallevel 2 while hiding')
  local screen = H.screen_line(gemm_row + 1)
  H.check(not screen:find('metadata', 1, true), 'metadata not drawn on screen', screen)
  H.contains(screen, 'custom-call(', 'the rest of the line is drawn')

  -- Text must never change.
  H.eq(api.nvim_buf_get_lines(b, 0, -1, false), before, 'lines unchanged while hidden')
  H.eq(vim.bo[b].modified, false, 'buffer not modified while hidden')

  -- A window switching to another buffer and back.
  vim.cmd('silent enew')
  H.eq(vim.wo.conceallevel, 1, 'other buffer in the same window keeps the user conceallevel')
  vim.cmd('silent buffer ' .. b)
  H.eq(vim.wo.conceallevel, 2, 'back on the HLO buffer: conceallevel 2')

  -- Show.
  vim.cmd('HloToggleMetadata')
  H.eq(#marks(b, inline.ns), 0, 'shown: no extmarks')
  H.eq(vim.wo.conceallevel, 1, 'shown: user conceallevel restored')
  screen = H.screen_line(gemm_row + 1)
  H.contains(screen, ', metadata={op_name=', 'metadata drawn again')
  -- Hide again.
  vim.cmd('HloToggleMetadata')
  H.eq(#marks(b, inline.ns), n_meta, 'hidden again: extmarks back')
  H.eq(vim.wo.conceallevel, 2, 'hidden again: conceallevel 2')
  -- Two windows on the buffer, the second with its own user value.
  vim.cmd('split')
  local win2 = api.nvim_get_current_win()
  H.eq(vim.wo[win2].conceallevel, 2, 'split window on the hidden buffer: conceallevel 2')
  vim.cmd('HloToggleMetadata show')
  H.check(vim.wo[win].conceallevel == 1 and vim.wo[win2].conceallevel == 1, 'show restores both windows', vim.wo[win].conceallevel .. ' ' .. vim.wo[win2].conceallevel)
  vim.cmd('HloToggleMetadata hide')
  H.check(vim.wo[win].conceallevel == 2 and vim.wo[win2].conceallevel == 2, 'hide sets both windows')
  vim.cmd('close')
  api.nvim_set_current_win(win)
  vim.cmd('HloToggleMetadata show')
  vim.cmd('HloToggleMetadata show')
  H.eq(vim.wo.conceallevel, 1, 'show twice: still the user value')
  vim.cmd('HloToggleMetadata hide')

  -- More kinds, and a marker character.
  inline.configure({ kinds = { 'metadata', 'backend_config' }, marker = '⋯' })
  inline.render(b)
  on_gemm = marks(b, inline.ns, gemm_row)
  H.eq(#on_gemm, 2, 'metadata and backend_config hidden on the custom-call line')
  screen = H.screen_line(gemm_row + 1)
  H.check(not screen:find('backend_config', 1, true), 'backend_config not drawn', screen)
  H.contains(screen, '⋯', 'marker drawn in place of the hidden ranges')
  inline.configure({ kinds = { 'metadata' }, marker = '' })
  inline.render(b)

  -- Edits move the extmarks with the text; the buffer writes back byte-identical.
  H.eq(api.nvim_buf_get_lines(b, 0, -1, false), before, 'lines unchanged after toggling')
  H.eq(vim.bo[b].modified, false, 'buffer not modified after toggling')
  local out = dir .. '/written.txt'
  vim.cmd('silent write! ' .. vim.fn.fnameescape(out))
  H.check(H.read_bytes(out) == H.read_bytes(dump), 'written copy is byte-identical to the original')

  -- Stale / out-of-range positions are clamped, never an error.
  local ok = pcall(inline.apply, b, {
    { kind = 'metadata', range = { start = { line = 0, character = 5 }, ['end'] = { line = 0, character = 100000 } } },
    { kind = 'metadata', range = { start = { line = 100000, character = 0 }, ['end'] = { line = 100001, character = 1 } } },
  }, 'utf-16')
  H.check(ok, 'out-of-range regions do not raise')
  H.eq(#marks(b, inline.ns), 1, 'in-range part of a clamped region kept, the other dropped')

  -- Multi-line region.
  inline.apply(b, {
    { kind = 'metadata', range = { start = { line = 2, character = 10 }, ['end'] = { line = 3, character = 4 } } },
  }, 'utf-16')
  local m = marks(b, inline.ns)
  H.check(#m == 1 and m[1][2] == 2 and m[1][3] == 10 and m[1][4].end_row == 3 and m[1][4].end_col == 4, 'multi-line region', vim.inspect(m))

  inline.detach(b)
  H.eq(#marks(b, inline.ns), 0, 'detach clears the extmarks')
  H.eq(vim.wo.conceallevel, 1, 'detach restores conceallevel')
  vim.cmd('silent bwipeout!')
end

local function test_utf16()
  local compat = require('hlo_lsp.compat')
  local inline = require('hlo_lsp.inline')
  inline.configure({ hidden = true, kinds = { 'metadata' }, marker = '' })
  -- é: 2 bytes / 1 UTF-16 unit; 😀: 4 bytes / 2 UTF-16 units / 1 UTF-32 unit.
  local prefix = '  %x = f32[] constant(1), frontend_attributes={n="é😀"}'
  local attr = ', metadata={op_name="é😀" source_file="ü.py"}'
  local line = prefix .. attr .. ', x=1'
  -- Length of `s` in `enc` code units (LuaJIT has no utf8 library).
  local function units(s, enc)
    if enc == 'utf-8' then
      return #s
    end
    local n, i = 0, 1
    while i <= #s do
      local c = s:byte(i)
      local len = c < 0x80 and 1 or c < 0xE0 and 2 or c < 0xF0 and 3 or 4
      n = n + ((enc == 'utf-16' and len == 4) and 2 or 1)
      i = i + len
    end
    return n
  end
  local b = api.nvim_create_buf(true, false)
  api.nvim_buf_set_lines(b, 0, -1, false, { 'HloModule m', '', line })
  api.nvim_set_current_buf(b)
  inline.attach(b, nil)
  for _, enc in ipairs({ 'utf-16', 'utf-32', 'utf-8' }) do
    local s = units(prefix, enc)
    local e = units(prefix .. attr, enc)
    inline.apply(b, { { kind = 'metadata', range = { start = { line = 2, character = s }, ['end'] = { line = 2, character = e } } } }, enc)
    local m = marks(b, inline.ns)
    H.check(#m == 1 and m[1][3] == #prefix and m[1][4].end_col == #prefix + #attr, 'position encoding ' .. enc .. ' -> byte columns', vim.inspect(m[1]))
  end
  H.eq(compat.byte_col('a😀b', 3, 'utf-16'), 5, 'byte_col utf-16 after a surrogate pair')
  H.eq(compat.byte_col('a😀b', 99, 'utf-16'), 6, 'byte_col clamps to the line end')
  inline.detach(b)
  api.nvim_buf_delete(b, { force = true })
end

--- The pure parts of views.lua: the readable view's line map.
local function test_views_pure()
  local views = require('hlo_lsp.views')
  H.eq(views.text_lines('a\nb\n'), { 'a', 'b' }, 'views: text without the empty line after the final newline')
  H.eq(views.text_lines(''), { '' }, 'views: empty text is one empty line')
  local NIL = vim.NIL
  local map = views.source_map({ 0, NIL, 5, 6, 7, 7, 7, 9, NIL, -1, 2.5 })
  H.eq(map, { [1] = 0, [3] = 5, [4] = 6, [5] = 7, [6] = 7, [7] = 7, [8] = 9 }, 'views: sourceLines -> 1-based row map, null dropped')
  H.eq(views.view_row_for(map, 7, 11), 5, 'views: first view row of a source line')
  H.eq(views.view_row_for(map, 8, 11), 5, 'views: a source line without a row: the row of the nearest earlier one')
  H.eq(views.view_row_for({}, 3, 2), nil, 'views: nothing mapped')
  H.eq(views.parse_readable(NIL), nil, 'views: a null result is no view')
  local v = views.parse_readable({ text = 'HloModule m\n\nENTRY %e {\n}\n', lineMap = { 0, NIL, 13, 30, NIL }, sourceLines = { 0, NIL, 2, 4, NIL } })
  H.eq(v, { lines = { 'HloModule m', '', 'ENTRY %e {', '}' }, map = { [1] = 0, [3] = 2, [4] = 4 } }, 'views: parse_readable')
end

local function test_setup()
  local hlo = require('hlo_lsp')
  local is_011 = vim.fn.has('nvim-0.11') == 1
  local fake_configs = {}
  if not is_011 then
    package.loaded['lspconfig.configs'] = fake_configs
  end
  hlo.setup({ autostart = false, cmd = { 'hlo-lsp-test-cmd' }, metadata_kinds = { 'metadata' } })
  H.eq(hlo.config.cmd, { 'hlo-lsp-test-cmd' }, 'setup: cmd replaced, not merged')
  H.eq(hlo.config.filetypes, { 'hlo' }, 'setup: default filetypes')
  H.eq(hlo.config.metadata_hidden, true, 'setup: metadata hidden by default')
  for _, name in ipairs({ 'HloToggleMetadata', 'HloRecompile', 'HloRestart', 'HloReadable', 'HloSummary', 'HloCompare', 'HloCounterpart' }) do
    H.eq(vim.fn.exists(':' .. name), 2, 'command :' .. name)
  end
  H.eq(type(vim.lsp.commands['hlo.showSummary']), 'function', 'client-side handler of the code lens command hlo.showSummary')
  local expected_mode = is_011 and 'config' or (vim.lsp.start and 'start' or 'start_client')
  H.eq(hlo.mode, expected_mode, 'client start mode for this Neovim')
  if is_011 then
    local c = vim.lsp.config.hlo_lsp
    H.eq(c and c.cmd, { 'hlo-lsp-test-cmd' }, 'vim.lsp.config.hlo_lsp.cmd')
    H.eq(c and c.filetypes, { 'hlo' }, 'vim.lsp.config.hlo_lsp.filetypes')
    H.check(c and type(c.root_dir) == 'function', 'vim.lsp.config.hlo_lsp.root_dir is a function')
  else
    local def = fake_configs.hlo_lsp
    H.check(def ~= nil, 'registered in lspconfig.configs when lspconfig is present')
    H.eq(def and def.default_config.cmd, { 'hlo-lsp-test-cmd' }, 'lspconfig default_config.cmd')
    H.eq(def and def.default_config.filetypes, { 'hlo' }, 'lspconfig default_config.filetypes')
    package.loaded['lspconfig.configs'] = nil
  end
  -- The launcher option (issue 16) reaches both the initialization options and
  -- the workspace/configuration settings of hlo.recompile.
  local launcher = { preset = 'slurm', args = { '--gpus=1', '--partition=gpu' } }
  hlo.config.launcher = launcher
  local cc = hlo.client_config('/tmp')
  H.eq(cc.init_options.recompile.launcher, launcher, 'setup{launcher}: init_options.recompile.launcher')
  H.eq(cc.settings.hlo.recompile.launcher, launcher, 'setup{launcher}: settings.hlo.recompile.launcher')
  hlo.config.launcher = nil
  H.eq(hlo.client_config('/tmp').settings, {}, 'no launcher: settings untouched')
  -- The device option reaches the initialization options (the cost estimates).
  hlo.config.device = 'h100-sxm'
  H.eq(hlo.client_config('/tmp').init_options.device, 'h100-sxm', 'setup{device}: init_options.device')
  hlo.config.device = nil
  H.eq(hlo.client_config('/tmp').init_options, nil, 'no device, no source_root: no init_options')
  -- The profile option (issue 43): the server's `profile`, a directory, absolute.
  hlo.config.profile = '/data/prof/'
  H.eq(hlo.client_config('/tmp').init_options.profile, '/data/prof', 'setup{profile}: init_options.profile')
  hlo.config.profile = '~'
  H.eq(hlo.client_config('/tmp').init_options.profile, vim.fn.expand('~'), 'setup{profile}: ~ expanded')
  hlo.config.profile = nil
  H.eq(hlo.client_config('/tmp').init_options, nil, 'no profile: no init_options')
  local prof = require('hlo_lsp.profile')
  H.eq(prof.directory(''), nil, ':HloProfile without a directory: none')
  H.eq(prof.run_label('2026_11_29_06_19_32'), '2026-11-29 06:19:32', 'a run named by its time')
  local found = prof.parse_runs({ runs = { { path = '/p/a', name = 'a' }, { path = 3 }, { path = '/p/b', name = 'b' } },
    loaded = vim.NIL, message = '' })
  H.eq(found, { runs = { { path = '/p/a', name = 'a' }, { path = '/p/b', name = 'b' } }, message = '' },
    'hlo/profileRuns answer validated (null loaded: none)')
  H.eq(prof.choices(found), { { path = '/p/b', name = 'b' }, { path = '/p/a', name = 'a' } }, 'runs offered newest first')
  H.eq(prof.format_run(found)(found.runs[2]), 'b (newest)  /p/b', 'the newest labelled')
  H.eq(vim.fn.exists(':HloProfile'), 2, ':HloProfile defined')
  -- Root: nearest marker, else the file's directory.
  local dump = H.example_dump()
  vim.cmd('silent edit ' .. vim.fn.fnameescape(dump))
  -- .git is a directory in a clone, a file in a git worktree: both mark the root.
  local expected_root = (vim.uv or vim.loop).fs_stat(vim.g.hlo_test_repo .. '/.git') ~= nil and vim.g.hlo_test_repo
    or vim.fn.fnamemodify(dump, ':p:h')
  if dump:find(vim.g.hlo_test_repo, 1, true) == 1 then
    H.eq(hlo.root_dir(0), expected_root, 'root_dir of the example dump')
  end
  vim.cmd('silent bwipeout!')
  local dir = H.tmpdir()
  local p = H.write(dir .. '/x.hlo', { 'HloModule m' })
  vim.cmd('silent edit ' .. p)
  H.eq(hlo.root_dir(0), vim.fn.fnamemodify(p, ':p:h'), "root_dir without markers: the file's directory")
  H.eq(hlo.get_client(0), nil, 'autostart=false: no client')
  H.eq(hlo.recompile(0), false, ':HloRecompile without a client only warns')
  -- Issue 40: the code action's arguments reach the server whole; :HloRecompile [target].
  H.eq({ hlo.recompile_options(''), hlo.recompile_options('h100'), hlo.recompile_options('cpu'),
    hlo.recompile_options(' GPU '), hlo.recompile_options('/x/my_gpu.txtpb') },
    { nil, { target = 'h100' }, { platform = 'cpu' }, { platform = 'gpu' }, { target = '/x/my_gpu.txtpb' } },
    ':HloRecompile [target]: the options of the code actions')
  local targets = {}
  for _, f in ipairs(vim.fn.glob(vim.g.hlo_test_repo .. '/hlo_lsp/dump/targets/*.txtpb', false, true)) do
    table.insert(targets, vim.fn.fnamemodify(f, ':t:r'))
  end
  local known = vim.deepcopy(hlo.RECOMPILE_TARGETS)
  table.sort(known)
  table.sort(targets)
  H.check(#targets > 0 and vim.deep_equal(known, targets), "RECOMPILE_TARGETS are the server's built-in targets",
    vim.inspect(targets))
  local completed = vim.fn.getcompletion('HloRecompile ', 'cmdline')
  table.sort(completed)
  local expected = vim.list_extend(vim.deepcopy(targets), { 'cpu', 'gpu' })
  table.sort(expected)
  H.eq(completed, expected, ':HloRecompile <Tab>: the targets, cpu and gpu')
  H.eq(vim.fn.getcompletion('HloRecompile h', 'cmdline'), { 'h100' }, ':HloRecompile h<Tab>')
  local real_recompile, sent = hlo.recompile, {}
  hlo.recompile = function(b, cb, options)
    table.insert(sent, { b, options })
    return true
  end
  vim.lsp.commands['hlo.recompile']({ command = 'hlo.recompile', arguments = { vim.uri_from_bufnr(0), { target = 'h100' } } },
    { bufnr = 0 })
  vim.lsp.commands['hlo.recompile']({ command = 'hlo.recompile', arguments = { vim.uri_from_bufnr(0) } }, { bufnr = 0 })
  vim.cmd('HloRecompile cpu')
  hlo.recompile = real_recompile
  local here = api.nvim_get_current_buf()
  H.eq(sent, { { here, { target = 'h100' } }, { here, nil }, { 0, { platform = 'cpu' } } },
    'the code action handler and :HloRecompile pass the options on')
  H.eq({ hlo.readable(0), hlo.summary(0), hlo.compare(0, { p }), hlo.counterpart(0) }, { false, false, false, false },
    ':HloReadable, :HloSummary, :HloCompare, :HloCounterpart without a client only warn')
  vim.cmd('silent bwipeout!')
  -- :checkhealth hlo_lsp
  local ok, err = pcall(vim.cmd, 'checkhealth hlo_lsp')
  local text = table.concat(api.nvim_buf_get_lines(0, 0, -1, false), '\n')
  H.check(ok and text:find('hlo-lsp: server command', 1, true) ~= nil, ':checkhealth hlo_lsp', ok and text or err)
  H.contains(text, 'hlo-lsp-test-cmd is not executable', 'checkhealth reports a missing server command')
  vim.cmd('silent bwipeout!')
end

local function test_keymaps_and_folding()
  local keymaps = require('hlo_lsp.keymaps')
  local compat = require('hlo_lsp.compat')
  if compat.nvim_0_11 then
    H.eq(keymaps.resolve(nil), { definition = 'gd' }, '0.11+: only gd (Neovim maps K, grr, gra, grn)')
  else
    H.eq(keymaps.resolve(nil), { hover = 'K', definition = 'gd', references = 'gr', code_action = '<leader>ca' },
      'before 0.11: K, gd, gr, <leader>ca')
  end
  H.eq(keymaps.resolve(false), {}, 'keymaps = false: no maps')
  local custom = keymaps.resolve({ definition = false, references = 'gR', bogus = 'x' })
  H.eq({ custom.definition, custom.references, custom.bogus }, { nil, 'gR', nil },
    'keymaps table: one map disabled, one changed, unknown actions ignored')
  local folding = require('hlo_lsp.folding')
  -- A computation (lines 1-4, 0-based) holding a region (2-3), and a one-line range.
  H.eq(folding.levels({ { startLine = 1, endLine = 4 }, { startLine = 2, endLine = 3 }, { startLine = 5, endLine = 5 } }, 7),
    { '0', '>1', '>2', '2', '1', '0', '0' }, 'fold levels from folding ranges')
end

local function test_kernel_files()
  local kernels = require('hlo_lsp.kernels')
  for _, name in ipairs({ 'module_0001.jit_fp8_block.7.ptx', '/d/module_0001.jit_fp8_block.7.ir-with-opt.ll',
    'module_0001.jit_f.constants.ir-no-opt.ll', '1700000000.module_0012.jit_g.3.ir-with-opt-noconst.ll' }) do
    H.eq(kernels.is_kernel_file(name), true, 'kernel file: ' .. name)
  end
  for _, name in ipairs({ 'notes.ptx', 'kernel.ll', 'module_0001.jit_f.ptx', 'module_0001.jit_f.7.ll',
    'module_0001.jit_f.sm_9.0a_gpu_after_optimizations.txt' }) do
    H.eq(kernels.is_kernel_file(name), false, 'not a kernel file: ' .. name)
  end
end

H.run(function()
  H.log('Neovim ' .. tostring(vim.version and vim.version() and string.format('%d.%d.%d', vim.version().major, vim.version().minor, vim.version().patch)))
  local dump = H.example_dump()
  test_filetype()
  test_syntax(dump)
  test_setup()
  test_views_pure()
  test_inline(dump)
  test_utf16()
  test_keymaps_and_folding()
  test_kernel_files()
end, 50000)
