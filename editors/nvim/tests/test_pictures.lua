-- The pictures without a browser (issue 40): :HloGraph and :HloMemory in a headless
-- Neovim with no display, as over SSH (test_nvim.py runs it with DISPLAY and
-- WAYLAND_DISPLAY empty and HLO_TEST_FAKE_BIN first on PATH: an xdg-open that records
-- its call and exits 3). Each must name the page it wrote and open the text view on
-- the cursor's instruction (the peak), whose <CR> goes to the instruction a line
-- names; likewise when there is a display but xdg-open fails, and when the
-- graph_opener function raises. :HloGraphText and :HloMemoryText open the views directly.
local H = dofile(vim.g.hlo_test_dir .. '/helpers.lua')
local api = vim.api
local hlo = require('hlo_lsp')
local views = require('hlo_lsp.views')

local TIMEOUT = 20000

-- Every notification, kept (minimal_init.lua prints them to stderr).
local notes = {}
local print_note = vim.notify
vim.notify = function(msg, level)
  table.insert(notes, tostring(msg))
  print_note(msg, level)
end

local function wait_attached(bufnr)
  return vim.wait(TIMEOUT, function()
    local c = hlo.get_client(bufnr)
    return c ~= nil and c.server_capabilities ~= nil
  end, 50)
end

--- Waits for a notification containing `needle`; returns it, or nil.
local function wait_note(needle)
  local found
  vim.wait(TIMEOUT, function()
    for _, n in ipairs(notes) do
      if n:find(needle, 1, true) then
        found = n
        return true
      end
    end
    return false
  end, 20)
  return found
end

--- Waits for the current buffer to be a text picture named `prefix`...; returns it.
local function wait_picture(prefix)
  local buf
  vim.wait(TIMEOUT, function()
    local cur = api.nvim_get_current_buf()
    if api.nvim_buf_get_name(cur):sub(1, #prefix) == prefix and views.picture_info(cur) ~= nil then
      buf = cur
    end
    return buf ~= nil
  end, 20)
  return buf
end

--- The page path a "... page written to PATH (no browser here: WHY)..." message names.
local function page_of(note)
  return note and note:match('page written to (.-%.html) %(no browser here: ')
end

local function close_views(src)
  vim.cmd('silent only')
  api.nvim_win_set_buf(0, src)
  notes = {}
end

--- Runs `command` on the custom-call line of `b` and checks the message and the view.
local function check_graph_fallback(b, gemm_row, command, why, what)
  api.nvim_win_set_cursor(0, { gemm_row + 1, 4 })
  vim.cmd(command)
  local note = wait_note('graph page written to ')
  local page = page_of(note)
  H.check(page ~= nil and vim.fn.filereadable(page) == 1, what .. ': the message names the page written', note)
  H.contains(note or '', why, what .. ': the message says why no browser opened it')
  if page then
    H.contains(table.concat(vim.fn.readfile(page), '\n'), 'id="hlo-graph-data"', what .. ': the file is the graph page')
  end
  local vb = wait_picture('hlo-graph://')
  if not H.check(vb ~= nil, what .. ': the text view opened', api.nvim_buf_get_name(0)) then
    return nil
  end
  H.check(api.nvim_get_current_line():find('^%%cublas%-gemm%.1%.0  cuBLASLt FP8 call') ~= nil,
    what .. ': the cursor starts on the cursor instruction', api.nvim_get_current_line())
  return vb
end

H.run(function()
  local v = vim.version()
  H.log(string.format('Neovim %d.%d.%d, vim.ui.open: %s', v.major, v.minor, v.patch, tostring(vim.ui.open ~= nil)))
  vim.o.columns = 200
  vim.cmd('syntax enable')
  -- No display, as over SSH (unset, not only empty).
  vim.env.DISPLAY = nil
  vim.env.WAYLAND_DISPLAY = nil
  local fake_bin = vim.env.HLO_TEST_FAKE_BIN
  local opened_log = vim.env.HLO_TEST_OPENED_LOG
  H.check(fake_bin ~= nil and vim.fn.exepath('xdg-open') == fake_bin .. '/xdg-open',
    'the xdg-open on PATH is the one that exits 3', vim.fn.exepath('xdg-open'))

  -- The reply validated (it comes from a server): one line each, malformed targets dropped.
  H.eq(views.parse_picture(vim.NIL), nil, 'a null reply is no picture')
  H.eq(views.parse_picture({ lines = { 'a', 1 } }), nil, 'a line that is no string: no picture')
  local r = { start = { line = 3, character = 2 }, ['end'] = { line = 3, character = 5 } }
  local p = views.parse_picture({ lines = { 'a\nb', 'c\r' }, cursorLine = 99,
    targets = { { line = 1, range = r }, { line = 'x', range = r }, { line = 0 }, 5 } })
  H.eq(p and { p.lines, p.cursor, p.targets, p.message }, { { 'a b', 'c ' }, 2, { [2] = r }, '' },
    'picture reply: newlines replaced, cursor clamped, malformed targets dropped')
  H.check(views.no_display() ~= nil, 'no $DISPLAY, no $WAYLAND_DISPLAY: no display')
  vim.env.WAYLAND_DISPLAY = 'wayland-0'
  H.eq(views.no_display(), nil, '$WAYLAND_DISPLAY set: a display')
  vim.env.WAYLAND_DISPLAY = nil

  local dump = H.example_dump()
  vim.cmd('silent edit ' .. vim.fn.fnameescape(dump))
  local b = api.nvim_get_current_buf()
  if not H.check(wait_attached(b), 'client attached to the GPU dump') then
    return
  end
  local gemm_row = H.find(b, '%cublas-gemm.1.0 =')
  local arg_row = H.find(b, '%Arg_0.1.0 = ')

  -- 1. :HloGraph with no display: the message names the page, the text view opens.
  local vb = check_graph_fallback(b, gemm_row, 'HloGraph 2', 'no display', ':HloGraph without a display')
  if vb then
    H.eq({ vim.bo[vb].buftype, vim.bo[vb].bufhidden, vim.bo[vb].filetype, vim.bo[vb].modifiable },
      { 'nofile', 'wipe', 'hlopicture', false }, 'text view: nofile, bufhidden=wipe, filetype hlopicture, read-only')
    local text = table.concat(api.nvim_buf_get_lines(vb, 0, -1, false), '\n')
    H.contains(text, 'operands, up to 2 hops:', 'text view: the operand tree, 2 hops')
    H.contains(text, 'users, down to 2 hops:\n└─ ROOT %get-tuple-element.1  get-tuple-element', 'text view: the user tree')
    H.eq(vim.fn.filereadable(opened_log), 0, 'no display: xdg-open was not even tried')
    -- <CR> on an operand line goes to that instruction in the dump
    local row = H.find(vb, '├─ 0: %Arg_0.1.0  parameter 0')
    api.nvim_win_set_cursor(0, { row + 1, 0 })
    vim.cmd([[execute "normal \<CR>"]])
    H.eq({ api.nvim_get_current_buf(), api.nvim_win_get_cursor(0)[1] }, { b, arg_row + 1 },
      '<CR> on the operand line goes to %Arg_0.1.0 in the dump')
    H.check(api.nvim_get_current_line():sub(api.nvim_win_get_cursor(0)[2] + 1):find('^%%Arg_0%.1%.0 = ') ~= nil,
      '<CR> lands on the name', api.nvim_get_current_line())
    -- the view stayed open beside the dump; q closes (and wipes) it
    local vwin = vim.fn.bufwinid(vb)
    if H.check(vwin ~= -1, 'the text view stays open after a jump') then
      api.nvim_set_current_win(vwin)
      vim.cmd('normal q')
      H.check(not api.nvim_buf_is_valid(vb), 'q closes the text view and wipes its buffer')
    end
  end
  close_views(b)

  -- 2. A display, but xdg-open exits 3 (vim.ui.open on 0.10+, jobstart before).
  vim.env.DISPLAY = ':99'
  vb = check_graph_fallback(b, gemm_row, 'HloGraph', 'xdg-open exited 3', ':HloGraph when xdg-open fails')
  H.eq(vim.fn.filereadable(opened_log), 1, 'xdg-open was tried with the page')
  vim.env.DISPLAY = nil
  close_views(b)

  -- 3. A graph_opener function that raises.
  hlo.config.graph_opener = function()
    error('no browser configured')
  end
  check_graph_fallback(b, gemm_row, 'HloGraph', 'graph_opener failed', ':HloGraph when graph_opener raises')
  hlo.config.graph_opener = nil
  close_views(b)

  -- 4. :HloGraphText on the computation header: its parameters and ROOT, no page.
  local header_row = H.find(b, 'ENTRY %main.4 ')
  api.nvim_win_set_cursor(0, { header_row + 1, 8 })
  vim.cmd('HloGraphText')
  vb = wait_picture('hlo-graph://')
  if H.check(vb ~= nil, ':HloGraphText opens the text view') then
    H.check(api.nvim_get_current_line():find('^ENTRY computation %%main%.4, ') ~= nil,
      ':HloGraphText on a header starts on the computation', api.nvim_get_current_line())
    H.check(H.find(vb, '  %Arg_1.2.0  parameter 1  f8e5m2[128,128]  (1 user)') ~= nil, ':HloGraphText lists the parameters')
  end
  H.eq(notes, {}, ':HloGraphText writes no page and says nothing')
  close_views(b)

  -- 5. :HloMemory on a dump with XLA's live-range report, no display.
  local conv = vim.fn.fnamemodify(dump, ':h')
    .. '/deviceless/conv_bias_relu/module_0001.jit_conv_bias_relu.sm_9.0a_gpu_after_optimizations.txt'
  vim.cmd('silent edit ' .. vim.fn.fnameescape(conv))
  local cb = api.nvim_get_current_buf()
  H.check(wait_attached(cb), 'client attached to the conv dump')
  vim.cmd('HloMemory')
  local note = wait_note('memory page written to ')
  local page = page_of(note)
  H.check(page ~= nil and vim.fn.filereadable(page) == 1, ':HloMemory without a display: the message names the page', note)
  if page then
    H.contains(table.concat(vim.fn.readfile(page), '\n'), 'id="peak" data-bytes="2244752"', ':HloMemory: the file is the memory page')
  end
  local mb = wait_picture('hlo-memory://')
  if H.check(mb ~= nil, ':HloMemory without a display: the text view opened') then
    local line = api.nvim_get_current_line()
    H.check(line:find('█', 1, true) ~= nil and line:find('%cudnn-conv-bias-activation.3  ◀ peak', 1, true) ~= nil,
      'the memory view starts on the peak row (a bar, the instruction run then)', line)
    H.check(H.find(mb, '1,048,576 B (1.0 MiB)  %x.1{}') ~= nil, 'the memory view lists the largest buffers at the peak')
    local row = api.nvim_win_get_cursor(0)[1]
    local function group(needle)
      return vim.fn.synIDattr(vim.fn.synID(row, line:find(needle, 1, true), 1), 'name')
    end
    H.eq({ vim.b[mb].current_syntax, group('█'), group('%cudnn'), group('◀ peak') },
      { 'hlopicture', 'hloPictureBar', 'hloPictureName', 'hloPicturePeak' }, 'the memory view is highlighted: bars, names, the peak')
    -- <CR> on the peak row goes to the instruction run then
    vim.cmd([[execute "normal \<CR>"]])
    H.eq({ api.nvim_get_current_buf(), api.nvim_win_get_cursor(0)[1] - 1 }, { cb, (H.find(cb, '%cudnn-conv-bias-activation.3 = ')) },
      '<CR> on the peak row goes to %cudnn-conv-bias-activation.3')
    -- <CR> on a buffer line goes to the instruction defining it (a parameter)
    api.nvim_set_current_win(vim.fn.bufwinid(mb))
    api.nvim_win_set_cursor(0, { H.find(mb, '  %x.1{}') + 1, 0 })
    vim.cmd([[execute "normal \<CR>"]])
    H.eq({ api.nvim_get_current_buf(), api.nvim_win_get_cursor(0)[1] - 1 }, { cb, (H.find(cb, '%x.1 = ')) },
      '<CR> on the buffer %x.1{} goes to its parameter')
  end
  close_views(cb)
  vim.cmd('HloMemoryText')
  H.check(wait_picture('hlo-memory://') ~= nil and #notes == 0, ':HloMemoryText opens the chart without a page')
end, 120000)
