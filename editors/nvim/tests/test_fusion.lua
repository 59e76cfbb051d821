-- Issue 44 in Neovim, with the real server, on a deviceless H100 dump with pass
-- dumps on (a copy of examples/gpu/deviceless/fp8_fusion_log: the
-- after-optimizations HLO, XLA:GPU's priority-fusion log, the GEMM fusion's PTX).
-- Environment (test_nvim.py): HLO_TEST_DUMP (the after-optimizations file),
-- HLO_TEST_REASON (the log's reason for the GEMM fusion).
-- K on %gemm_fusion_dot shows why it was not fused; gd on it opens the PTX file
-- on its `.entry` line, the cursor on the kernel's name; gd there comes back.
local H = dofile(vim.g.hlo_test_dir .. '/helpers.lua')
local api = vim.api
local hlo = require('hlo_lsp')

local TIMEOUT = 20000

H.run(function()
  local b = H.open_with_server(vim.env.HLO_TEST_DUMP, nil, TIMEOUT)

  -- K on the GEMM fusion: the priority-fusion log's reason.
  local row, col = H.find(b, '%gemm_fusion_dot =')
  api.nvim_win_set_cursor(0, { row + 1, col + 2 })
  local text = H.hover_until('Priority fusion', TIMEOUT)
  H.contains(text, 'not fused into its users: ' .. vim.env.HLO_TEST_REASON,
    'K on the GEMM fusion says why it was not fused')

  -- gd on it: the PTX file, on the kernel's .entry.
  api.nvim_win_set_cursor(0, { row + 1, col + 2 })
  H.feed('gd')
  local opened = vim.wait(TIMEOUT, function()
    return api.nvim_buf_get_name(0):match('%.ptx$') ~= nil
  end, 20)
  H.check(opened, 'gd opens the PTX file', api.nvim_buf_get_name(0))
  local cursor = api.nvim_win_get_cursor(0)
  local line = api.nvim_get_current_line()
  H.eq(line, '.visible .entry gemm_fusion_dot(', 'on the kernel\'s .entry line')
  H.eq(line:sub(cursor[2] + 1, cursor[2] + #'gemm_fusion_dot'), 'gemm_fusion_dot',
    'the cursor on the kernel\'s name')

  -- The PTX is what it is (not HLO), with the client attached: gd on the
  -- .entry goes back to the HLO instruction's line.
  local ptx = api.nvim_get_current_buf()
  H.check(vim.bo[ptx].filetype ~= 'hlo', 'the PTX file is not HLO', vim.bo[ptx].filetype)
  H.check(vim.wait(TIMEOUT, function()
    return hlo.get_client(ptx) ~= nil
  end, 50), 'the client attached to the PTX file')
  H.feed('gd')
  H.check(vim.wait(TIMEOUT, function()
    return api.nvim_get_current_buf() == b
  end, 20), 'gd on the .entry goes back to the HLO file', api.nvim_buf_get_name(0))
  H.eq(api.nvim_win_get_cursor(0)[1] - 1, row, 'on the instruction\'s line')
end, 60000)
