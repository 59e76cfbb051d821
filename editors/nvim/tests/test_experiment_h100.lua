-- Issue 44, acceptance item 3: the experiment "Triton GEMM off" applied from Neovim on a
-- deviceless H100 dump (slow: JAX compiles for an H100 without one; needs jax[cuda12]).
-- HLO_TEST_DUMP is the sm_9.0a after-optimizations file of a dump of the FP8 matmul with
-- a bias made by `hlo-lsp dump --target h100` (default flags: the dot is a Triton GEMM
-- fusion). The cursor is on `%gemm_fusion_dot`; the action is applied as a user does:
-- 0.11+ vim.lsp.buf.code_action({ filter, apply = true }), 0.7 the code action map and
-- its menu; the confirmation (window/showMessageRequest) is answered "Run" as the user
-- would. The message names the cuBLASLt FP8 call, and the variant's file is opened at it.
local H = dofile(vim.g.hlo_test_dir .. '/helpers.lua')
local api = vim.api
local hlo = require('hlo_lsp')

local TITLE = 'Recompile with Triton GEMM off (--xla_gpu_enable_triton_gemm=false)'
local SENTENCE = 'with `--xla_gpu_enable_triton_gemm=false`: `%gemm_fusion_dot` -> one cuBLASLt FP8 call with a BIAS epilogue'
local notes = {}
local questions = {}

H.run(function()
  H.capture_notes(notes)
  -- The user answers the confirmation with its first choice, "Run".
  vim.lsp.handlers['window/showMessageRequest'] = function(_, result)
    table.insert(questions, result.message)
    return result.actions[1]
  end
  hlo.setup({ cmd = vim.g.hlo_test_cmd, cmd_cwd = vim.g.hlo_test_repo })
  local dump_dir = vim.fn.fnamemodify(vim.env.HLO_TEST_DUMP, ':p:h')
  vim.cmd('silent edit ' .. vim.fn.fnameescape(vim.env.HLO_TEST_DUMP))
  local b = api.nvim_get_current_buf()
  H.wait_attached(b)
  local row = H.find(b, '%gemm_fusion_dot = ')
  H.check(row ~= nil, 'the line of %gemm_fusion_dot')
  api.nvim_win_set_cursor(0, { (row or 0) + 1, 4 })

  local offered = H.apply_code_action(b, TITLE)
  local report = H.wait_note(notes, { 'Experiment ', 'No code actions', 'Cannot ' }, 400000)
  H.check(report ~= nil, 'the action shows a report',
    'offered: ' .. vim.inspect(offered) .. '\n' .. table.concat(notes, '\n---\n'))
  report = report or ''
  H.contains(report, SENTENCE, 'the report says what the instruction became')
  H.eq(#questions, 1, 'the experiment was confirmed once')
  H.contains(questions[1] or '', 'XLA_FLAGS=--xla_gpu_enable_triton_gemm=false', 'the confirmation shows the flag')
  -- The variant's file is opened at the cuBLASLt call (window/showDocument).
  local variant = dump_dir .. '.experiments/xla_gpu_enable_triton_gemm=false/'
  H.check(vim.wait(30000, function()
    return api.nvim_buf_get_name(0):find(variant, 1, true) ~= nil
  end, 50), 'the variant file is shown', api.nvim_buf_get_name(0))
  local line = api.nvim_get_current_line()
  H.contains(line, '__cublas$lt$matmul$f8', 'the cursor is on the cuBLASLt FP8 call')
  H.eq(type(hlo.last_recompile) == 'table' and type(hlo.last_recompile.experiment) == 'table'
    and hlo.last_recompile.experiment.outcome.after, 'cuBLASLt FP8 call with a BIAS epilogue', "the reply's outcome")
end, 480000)
