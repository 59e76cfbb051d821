-- The plugin with the real server, inside Neovim:
--   HLO_LSP_CMD='python -m hlo_lsp' nvim --headless -u editors/nvim/tests/minimal_init.lua -c 'luafile editors/nvim/tests/test_lsp.lua'
-- Opens a real GPU dump (examples/gpu) and checks filetype, attach, hover,
-- go-to-definition, the metadata toggle (buffer untouched), :HloRestart, the views
-- (:HloReadable[!], :HloSummary, :HloGraph, :HloCompare, :HloCounterpart), and that a
-- *-buffer-assignment.txt file gets neither the filetype nor a client.
local H = dofile(vim.g.hlo_test_dir .. '/helpers.lua')
local api = vim.api
local hlo = require('hlo_lsp')
local inline = require('hlo_lsp.inline')
local views = require('hlo_lsp.views')

local TIMEOUT = 15000

local function lsp_log_tail()
  local path = vim.lsp.get_log_path()
  local ok, lines = pcall(vim.fn.readfile, path)
  if not ok then
    return '(no LSP log)'
  end
  local out = {}
  for i = math.max(1, #lines - 30), #lines do
    table.insert(out, lines[i])
  end
  return path .. ':\n' .. table.concat(out, '\n')
end

local function pos_params(bufnr, row, col)
  return {
    textDocument = { uri = vim.uri_from_bufnr(bufnr) },
    position = { line = row, character = col },
  }
end

--- The single hlo-lsp answer of a synchronous request.
local function request(bufnr, method, params)
  local client = hlo.get_client(bufnr)
  local results, err = vim.lsp.buf_request_sync(bufnr, method, params, TIMEOUT)
  if results == nil then
    return nil, 'no answer: ' .. tostring(err)
  end
  local res = client and results[client.id]
  if res == nil then
    return nil, 'no answer from hlo_lsp: ' .. vim.inspect(results)
  end
  if res.err or res.error then
    return nil, vim.inspect(res.err or res.error)
  end
  return res.result
end

local function hover_text(result)
  if result == nil or result == vim.NIL then
    return ''
  end
  local parts = {}
  local function add(c)
    if type(c) == 'string' then
      table.insert(parts, c)
    elseif type(c) == 'table' then
      if c.value then
        table.insert(parts, c.value)
      else
        for _, x in ipairs(c) do
          add(x)
        end
      end
    end
  end
  add(result.contents)
  return table.concat(parts, '\n')
end

local function locations(result)
  if result == nil or result == vim.NIL then
    return {}
  end
  if result.uri or result.targetUri then
    result = { result }
  end
  local out = {}
  for _, loc in ipairs(result) do
    local range = loc.targetSelectionRange or loc.range or loc.targetRange
    table.insert(out, { uri = loc.uri or loc.targetUri, line = range.start.line, character = range.start.character })
  end
  return out
end

local function check_definition(bufnr, name, from_row, from_col, want_row)
  local result, err = request(bufnr, 'textDocument/definition', pos_params(bufnr, from_row, from_col))
  local locs = locations(result)
  local ok = #locs >= 1 and locs[1].uri == vim.uri_from_bufnr(bufnr) and locs[1].line == want_row
  H.check(ok, 'definition of ' .. name .. ' -> line ' .. (want_row + 1), err or vim.inspect(result))
end

local function buffer_text(bufnr)
  return table.concat(api.nvim_buf_get_lines(bufnr, 0, -1, false), '\n')
end

--- Waits for a scratch buffer whose name starts with `prefix` to be current; returns it.
local function wait_current(prefix)
  local buf
  vim.wait(TIMEOUT, function()
    local cur = api.nvim_get_current_buf()
    if api.nvim_buf_get_name(cur):sub(1, #prefix) == prefix and api.nvim_buf_line_count(cur) > 1 then
      buf = cur
    end
    return buf ~= nil
  end, 20)
  return buf
end

local function wait_attached(bufnr)
  return vim.wait(20000, function()
    local c = hlo.get_client(bufnr)
    return c ~= nil and c.server_capabilities ~= nil
  end, 50)
end

--- :HloReadable[!], :HloSummary (and the code lens command), :HloCompare, :HloCounterpart.
--- Runs `command` with an opener that records the page it is handed; the page's path or nil.
local function opened_page(command)
  local opened = nil
  hlo.config.graph_opener = function(path)
    opened = path
  end
  vim.cmd(command)
  vim.wait(TIMEOUT, function()
    return opened ~= nil
  end, 20)
  hlo.config.graph_opener = nil
  return opened
end

local function test_views(b, win, gemm_row)
  api.nvim_set_current_win(win)
  api.nvim_win_set_buf(win, b)
  api.nvim_win_set_cursor(win, { gemm_row + 1, 4 })

  -- Readable view: a read-only hlo scratch buffer, cursor on the same instruction.
  vim.cmd('HloReadable')
  local vb = wait_current('hlo-readable://')
  if not H.check(vb ~= nil and views.readable_info(vb) ~= nil, ':HloReadable opens a readable view buffer', api.nvim_buf_get_name(0)) then
    return
  end
  H.eq({ vim.bo[vb].buftype, vim.bo[vb].filetype, vim.bo[vb].modifiable }, { 'nofile', 'hlo', false },
    'readable view: buftype=nofile, filetype=hlo, not modifiable')
  vim.wait(200)
  H.eq(hlo.get_client(vb), nil, 'no hlo_lsp client on the readable view buffer')
  local text = buffer_text(vb)
  H.contains(text, '"gemm_backend_config": {', 'readable view expands backend_config')
  H.check(not text:find('metadata={', 1, true), 'readable view reduces metadata')
  H.contains(api.nvim_get_current_line(), '%cublas-gemm.1.0 = ', 'readable view cursor starts on the instruction under the cursor')
  local view_win = api.nvim_get_current_win()

  -- gd on the custom-call line -> its line in the original file
  local vrow = H.find(vb, '%cublas-gemm.1.0 = ')
  api.nvim_win_set_cursor(view_win, { 1, 0 })
  api.nvim_win_set_cursor(view_win, { vrow + 1, 0 })
  vim.cmd('normal gd')
  H.eq({ api.nvim_get_current_buf(), api.nvim_win_get_cursor(0)[1] }, { b, gemm_row + 1 },
    'gd in the readable view jumps to the original line of %cublas-gemm.1.0')
  H.contains(api.nvim_get_current_line(), '%cublas-gemm.1.0 = ', 'landed on the %cublas-gemm.1.0 line')
  -- <CR> on a line of the expanded backend_config -> the same original line
  api.nvim_set_current_win(view_win)
  local crow = H.find(vb, '"gemm_backend_config": {')
  api.nvim_win_set_cursor(view_win, { crow + 1, 0 })
  vim.cmd([[execute "normal \<CR>"]])
  H.eq({ api.nvim_get_current_buf(), api.nvim_win_get_cursor(0)[1] }, { b, gemm_row + 1 },
    '<CR> on the expanded backend_config jumps to the custom-call line')

  -- :HloReadable! inlines the fused computations under their fusion
  api.nvim_set_current_win(win)
  vim.cmd('HloReadable!')
  local ib = wait_current('hlo-readable://')
  vim.wait(TIMEOUT, function()
    ib = api.nvim_get_current_buf()
    return ib ~= vb and views.readable_info(ib) ~= nil
  end, 20)
  H.check(ib ~= vb and api.nvim_buf_get_name(ib):find('fusions inlined', 1, true) ~= nil, ':HloReadable! opens another view', api.nvim_buf_get_name(ib))
  H.check(buffer_text(ib):find('\n      %wrapped_transpose_computation (', 1, true) ~= nil, ':HloReadable! indents the fused computation under its fusion')
  vim.cmd('silent only')

  -- :HloSummary
  api.nvim_win_set_buf(0, b)
  vim.cmd('HloSummary')
  local sb = wait_current('hlo-summary://')
  H.check(sb ~= nil and buffer_text(sb):find('cuBLASLt FP8', 1, true) ~= nil, ':HloSummary shows the kernel summary with cuBLASLt FP8',
    sb and buffer_text(sb))
  H.eq(sb and vim.bo[sb].modifiable, false, 'summary buffer is not modifiable')
  -- the code lens command, as vim.lsp.codelens.run() would execute it
  vim.cmd('silent only')
  api.nvim_win_set_buf(0, b)
  vim.cmd('bwipeout ' .. sb)
  vim.lsp.commands['hlo.showSummary']({ title = 'x', command = 'hlo.showSummary', arguments = { vim.uri_from_bufnr(b) } }, { bufnr = b })
  sb = wait_current('hlo-summary://')
  H.check(sb ~= nil and buffer_text(sb):find('cuBLASLt FP8', 1, true) ~= nil, 'the code lens command hlo.showSummary shows the summary')
  vim.cmd('silent only')

  -- :HloGraph on the custom-call: the page written and handed to the opener
  api.nvim_win_set_buf(0, b)
  api.nvim_win_set_cursor(0, { gemm_row + 1, 4 })
  local opened = opened_page('HloGraph 2')
  if H.check(opened ~= nil and vim.fn.filereadable(opened) == 1, ':HloGraph writes the page and opens it', opened) then
    local page = table.concat(vim.fn.readfile(opened), '\n')
    H.contains(page, 'id="hlo-graph-data"', ':HloGraph page carries the graph data')
    H.contains(page, '"name":"cublas-gemm.1.0"', ':HloGraph page has the custom-call node')
    H.contains(page, 'around cublas-gemm.1.0', ':HloGraph page is the neighbourhood of the cursor')
    H.contains(page, 'hloGraphviz', ':HloGraph page inlines the renderer (works offline)')
  end

  -- :HloMemory on a dump with XLA's live-range report beside it
  local conv = vim.fn.fnamemodify(H.example_dump(), ':h')
    .. '/deviceless/conv_bias_relu/module_0001.jit_conv_bias_relu.sm_9.0a_gpu_after_optimizations.txt'
  vim.cmd('silent edit ' .. vim.fn.fnameescape(conv))
  local cb = api.nvim_get_current_buf()
  H.check(wait_attached(cb), 'client attached to the conv dump')
  opened = opened_page('HloMemory')
  if H.check(opened ~= nil and vim.fn.filereadable(opened) == 1, ':HloMemory writes the page and opens it', opened) then
    local page = table.concat(vim.fn.readfile(opened), '\n')
    H.contains(page, 'id="peak" data-bytes="2244752"', ':HloMemory page: the peak of the live-range report')
    H.contains(page, 'data-name="cudnn-conv-bias-activation.3" data-range=', ':HloMemory page: a buffer row reveals its instruction')
  end
  vim.cmd('silent only')
  api.nvim_win_set_buf(0, b)

  -- :HloCompare {file}: the cuBLASLt call of the fused dump disappeared in the gemm-fusion one
  local gpu_dir = vim.fn.fnamemodify(H.example_dump(), ':h')
  local old = gpu_dir .. '/jit_matmul_fn_with_scale.fp8_cublaslt_fused.gpu_after_optimizations.txt'
  local new = gpu_dir .. '/jit_matmul_fn_with_scale.fp8_gemm_fusion.gpu_after_optimizations.txt'
  vim.cmd('silent edit ' .. vim.fn.fnameescape(old))
  local ob = api.nvim_get_current_buf()
  H.check(wait_attached(ob), 'client attached to the fused dump')
  vim.cmd('HloCompare ' .. vim.fn.fnameescape(new))
  local db = wait_current('hlo-compare://')
  local diff = db and buffer_text(db) or ''
  H.contains(diff, 'disappeared', ':HloCompare reports what disappeared')
  H.contains(diff, '`__cublas$lt$matmul$f8` disappeared (1 -> 0)', ':HloCompare: the cuBLASLt FP8 call disappeared')
  vim.cmd('silent only')

  -- :HloCounterpart: after optimizations -> before optimizations of the same module
  local after = vim.g.hlo_test_repo .. '/examples/cpu_dump/module_0028.jit_train_step.cpu_after_optimizations.txt'
  if vim.fn.filereadable(after) == 1 then
    vim.cmd('silent edit ' .. vim.fn.fnameescape(after))
    local ab = api.nvim_get_current_buf()
    H.check(wait_attached(ab), 'client attached to the CPU dump')
    local prow = H.find(ab, '%params__b1__.1 = ')
    api.nvim_win_set_cursor(0, { prow + 1, 4 })
    vim.cmd('HloCounterpart')
    local before_name = 'module_0028.jit_train_step.before_optimizations.txt'
    local moved = vim.wait(TIMEOUT, function()
      return api.nvim_buf_get_name(0):sub(-#before_name) == before_name
    end, 20)
    H.check(moved, ':HloCounterpart opens the before_optimizations file', api.nvim_buf_get_name(0))
    H.contains(api.nvim_get_current_line(), '%params__b1__.1 = ', ':HloCounterpart lands on the same instruction')
  else
    H.log('skip - :HloCounterpart (examples/cpu_dump not generated)')
  end

  vim.cmd('silent only')
  api.nvim_win_set_buf(0, b)
end

local function conceal_marks(bufnr, row)
  return api.nvim_buf_get_extmarks(bufnr, inline.ns, { row, 0 }, { row, -1 }, { details = true })
end

H.run(function()
  local v = vim.version()
  H.log(string.format('Neovim %d.%d.%d, client start: %s, server: %s', v.major, v.minor, v.patch, tostring(hlo.mode), table.concat(vim.g.hlo_test_cmd, ' ')))
  vim.o.columns = 1200
  vim.o.wrap = false

  -- The real dump, opened in place (it is only ever written to a temp copy).
  local dump = H.example_dump()
  local dir = H.tmpdir()
  local original_bytes = H.read_bytes(dump)

  vim.cmd('silent edit ' .. vim.fn.fnameescape(dump))
  local b = api.nvim_get_current_buf()
  local win = api.nvim_get_current_win()
  vim.wo[win].conceallevel = 0
  api.nvim_win_set_cursor(win, { 1, 0 })
  H.eq(vim.bo[b].filetype, 'hlo', 'filetype is hlo')

  local attached = vim.wait(20000, function()
    local c = hlo.get_client(b)
    return c ~= nil and c.initialized ~= false and c.server_capabilities ~= nil
  end, 50)
  if not H.check(attached, 'hlo_lsp client attached', lsp_log_tail()) then
    return
  end
  local client = hlo.get_client(b)
  H.log('client ' .. client.id .. ', root ' .. tostring(client.config.root_dir) .. ', position encoding ' .. tostring(client.offset_encoding))

  -- Hover on the definition of %cublas-gemm.1.0.
  local gemm_row, gemm_col = H.find(b, '%cublas-gemm.1.0 =')
  local result, err = request(b, 'textDocument/hover', pos_params(b, gemm_row, gemm_col + 1))
  local text = hover_text(result)
  H.check(text:find('custom-call', 1, true) ~= nil, 'hover on %cublas-gemm.1.0 mentions custom-call', err or text)
  H.check(text:find('__cublas$lt$matmul$f8', 1, true) ~= nil, 'hover on %cublas-gemm.1.0 mentions __cublas$lt$matmul$f8', err or text)

  -- Go to definition: a computation after calls=, and an operand.
  local header_row = H.find(b, '%wrapped_transpose_computation (')
  local calls_row, calls_col = H.find(b, 'calls=%wrapped_transpose_computation')
  check_definition(b, '%wrapped_transpose_computation (calls=)', calls_row, calls_col + #'calls=%' + 2, header_row)
  local param_row = H.find(b, '%Arg_0.1.0 = ')
  local _, operand_col = H.find(b, '%Arg_0.1.0,', gemm_row)
  check_definition(b, '%Arg_0.1.0 (custom-call operand)', gemm_row, operand_col + 2, param_row)
  H.contains(api.nvim_buf_get_lines(b, param_row, param_row + 1, false)[1], 'parameter(0)', 'the operand definition line is parameter(0)')

  -- The same jump through the editor command (vim.lsp.buf.definition moves the cursor).
  api.nvim_win_set_cursor(win, { calls_row + 1, calls_col + #'calls=%' + 2 })
  vim.lsp.buf.definition()
  local jumped = vim.wait(TIMEOUT, function()
    return api.nvim_win_get_cursor(win)[1] == header_row + 1
  end, 20)
  H.check(jumped, 'vim.lsp.buf.definition() jumps to the computation header', vim.inspect(api.nvim_win_get_cursor(win)))
  api.nvim_win_set_buf(win, b)
  api.nvim_win_set_cursor(win, { 1, 0 })

  -- Metadata hidden by default: regions came from hlo/inlineRegions.
  local got_regions = vim.wait(TIMEOUT, function()
    return inline.regions(b) ~= nil and #conceal_marks(b, gemm_row) > 0
  end, 20)
  local regions = inline.regions(b)
  H.check(got_regions, 'hlo/inlineRegions answered and conceal extmarks exist on the custom-call line', vim.inspect(regions))
  local kinds = {}
  for _, r in ipairs(regions or {}) do
    kinds[r.kind] = (kinds[r.kind] or 0) + 1
  end
  H.log('regions: ' .. vim.inspect(kinds, { newline = ' ', indent = '' }))
  H.check((kinds.metadata or 0) >= 6, 'a metadata region per instruction with metadata', vim.inspect(kinds))

  local before = api.nvim_buf_get_lines(b, 0, -1, false)
  local gemm_line = before[gemm_row + 1]
  local marks = conceal_marks(b, gemm_row)
  H.eq(#marks, 1, 'one hidden range on the custom-call line (metadata only by default)')
  if marks[1] then
    local d = marks[1][4]
    local hidden = (d.end_row == gemm_row) and gemm_line:sub(marks[1][3] + 1, d.end_col) or '(multi-line)'
    H.check(hidden:sub(1, 12) == ', metadata={' and hidden:sub(-1) == '}', 'the hidden range is exactly ", metadata={...}"', vim.inspect(hidden))
  end
  H.eq(vim.wo[win].conceallevel, 2, 'conceallevel 2 while hidden')
  local screen = H.screen_line(gemm_row + 1 - vim.fn.line('w0') + 1)
  H.check(not screen:find('metadata=', 1, true), 'metadata not drawn on screen', screen)
  H.contains(screen, 'backend_config=', 'backend_config still drawn')

  -- Toggle: shown, then hidden again.
  vim.cmd('HloToggleMetadata')
  H.eq(#api.nvim_buf_get_extmarks(b, inline.ns, 0, -1, {}), 0, 'after toggle: no extmarks')
  H.eq(vim.wo[win].conceallevel, 0, 'after toggle: conceallevel restored to 0')
  screen = H.screen_line(gemm_row + 1 - vim.fn.line('w0') + 1)
  H.contains(screen, ', metadata={op_name=', 'after toggle: metadata drawn')
  vim.cmd('HloToggleMetadata')
  H.check(#conceal_marks(b, gemm_row) == 1, 'toggled back: conceal extmark on the custom-call line again')

  -- The buffer never changed.
  H.eq(api.nvim_buf_get_lines(b, 0, -1, false), before, 'nvim_buf_get_lines identical before/after')
  H.eq(vim.bo[b].modified, false, "&modified is false")
  local out = dir .. '/written_copy.txt'
  vim.cmd('silent write! ' .. vim.fn.fnameescape(out))
  H.check(H.read_bytes(out) == original_bytes, 'buffer written to a temp copy is byte-identical to the original dump')

  -- :HloRestart: a new client attaches and the regions are asked again.
  local old_id = client.id
  vim.cmd('HloRestart')
  local restarted = vim.wait(20000, function()
    local c = hlo.get_client(b)
    return c ~= nil and c.id ~= old_id and c.server_capabilities ~= nil
  end, 50)
  H.check(restarted, ':HloRestart starts a new client for the buffer', lsp_log_tail())
  local c_old = vim.lsp.get_client_by_id(old_id)
  H.check(c_old == nil or require('hlo_lsp.compat').client_is_stopped(c_old), ':HloRestart stopped the old client')
  result, err = request(b, 'textDocument/hover', pos_params(b, gemm_row, gemm_col + 1))
  H.contains(hover_text(result), 'custom-call', 'hover works after restart')

  test_views(b, win, gemm_row)

  -- Non-ASCII text before the end of a range: the server's columns and the
  -- position encoding it announced must agree (protocol: UTF-16 offsets).
  local uni = dir .. '/unicode.hlo'
  local uni_line = '  ROOT %c = f32[] constant(1), metadata={op_name="é😀 ü"}, frontend_attributes={a="b"}'
  H.write(uni, { 'HloModule m', '', 'ENTRY %main () -> f32[] {', uni_line, '}' })
  vim.cmd('silent edit ' .. vim.fn.fnameescape(uni))
  local ub = api.nvim_get_current_buf()
  vim.wait(TIMEOUT, function()
    return inline.regions(ub) ~= nil and #conceal_marks(ub, 3) > 0
  end, 20)
  local um = conceal_marks(ub, 3)
  local uc = hlo.get_client(ub)
  local hidden_uni = um[1] and uni_line:sub(um[1][3] + 1, um[1][4].end_col) or '(none)'
  H.eq(hidden_uni, ', metadata={op_name="é😀 ü"}', 'non-ASCII line: exactly the metadata is hidden (position encoding '
    .. tostring(uc and uc.offset_encoding) .. ')')

  -- Edits: the server is told (didChange) and new ranges are asked for (debounced).
  api.nvim_buf_set_lines(ub, 3, 3, false, { '  %d = f32[] constant(2), metadata={op_name="new"}' })
  local updated = vim.wait(TIMEOUT, function()
    return #conceal_marks(ub, 3) == 1 and #conceal_marks(ub, 4) >= 1
  end, 20)
  local new_marks = conceal_marks(ub, 3)
  local new_line = api.nvim_buf_get_lines(ub, 3, 4, false)[1]
  local new_hidden = new_marks[1] and new_line:sub(new_marks[1][3] + 1, new_marks[1][4].end_col) or '(none)'
  H.check(updated and new_hidden == ', metadata={op_name="new"}', 'after an edit the new line gets its metadata hidden', new_hidden)
  vim.cmd('silent bwipeout!')

  -- A buffer-assignment dump: not hlo, no client.
  local neg = dir .. '/module_0001.jit_f.cpu_after_optimizations-buffer-assignment.txt'
  H.write(neg, { 'BufferAssignment:', 'allocation 0: size 4, parameter 0, shape |f32[]| at ShapeIndex {}:' })
  vim.cmd('silent edit ' .. vim.fn.fnameescape(neg))
  local nb = api.nvim_get_current_buf()
  H.check(vim.bo[nb].filetype ~= 'hlo', 'a *-buffer-assignment.txt file is not hlo', vim.bo[nb].filetype)
  vim.wait(300)
  H.eq(hlo.get_client(nb), nil, 'no hlo_lsp client on the buffer-assignment file')
  H.check(H.read_bytes(dump) == original_bytes, 'the example dump on disk is untouched')
end, 100000)
