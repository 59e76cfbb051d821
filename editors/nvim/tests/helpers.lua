-- Tiny assertion helpers for the headless Neovim tests. Output goes to stdout;
-- the run ends with `N passed, N failed` and exit code 1 on any failure.
local H = {}

H.passed = 0
H.failed = {}

function H.log(msg)
  io.stdout:write(msg .. '\n')
  io.stdout:flush()
end

function H.check(cond, name, detail)
  if cond then
    H.passed = H.passed + 1
    H.log('ok   - ' .. name)
  else
    table.insert(H.failed, name)
    H.log('FAIL - ' .. name .. (detail ~= nil and (': ' .. tostring(detail)) or ''))
  end
  return cond
end

function H.eq(actual, expected, name)
  local same = vim.deep_equal(actual, expected)
  return H.check(same, name, not same and ('expected ' .. vim.inspect(expected) .. ', got ' .. vim.inspect(actual)) or nil)
end

function H.contains(haystack, needle, name)
  local ok = type(haystack) == 'string' and haystack:find(needle, 1, true) ~= nil
  return H.check(ok, name, not ok and ('no ' .. vim.inspect(needle) .. ' in ' .. vim.inspect(haystack)) or nil)
end

function H.finish()
  H.log(string.format('%d passed, %d failed', H.passed, #H.failed))
  if #H.failed > 0 then
    H.log('failed: ' .. table.concat(H.failed, '; '))
    vim.cmd('cquit 1')
  else
    vim.cmd('qall!')
  end
end

--- Run `fn`, report an error as a failure, then quit with the right code.
--- A watchdog fails the run after `timeout_ms`.
function H.run(fn, timeout_ms)
  local timer = (vim.uv or vim.loop).new_timer()
  timer:start(timeout_ms or 55000, 0, vim.schedule_wrap(function()
    H.log('FAIL - watchdog: the test did not finish in time')
    table.insert(H.failed, 'watchdog')
    H.finish()
  end))
  local ok, err = xpcall(fn, debug.traceback)
  if not ok then
    table.insert(H.failed, 'error')
    H.log('FAIL - error: ' .. tostring(err))
  end
  H.finish()
end

--- 0-based (row, col) of the first line containing `needle` (plain), col of the match.
function H.find(bufnr, needle, start_row)
  local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
  for i = (start_row or 0) + 1, #lines do
    local s = lines[i]:find(needle, 1, true)
    if s then
      return i - 1, s - 1
    end
  end
  return nil, nil
end

--- Text shown on screen row `row` (1-based), `ncols` cells.
function H.screen_line(row, ncols)
  vim.cmd('redraw!')
  local out = {}
  for c = 1, ncols or vim.o.columns do
    table.insert(out, vim.fn.screenstring(row, c))
  end
  return table.concat(out)
end

function H.tmpdir()
  local dir = vim.fn.tempname()
  vim.fn.mkdir(dir, 'p')
  return dir
end

function H.write(path, lines)
  vim.fn.writefile(lines, path)
  return path
end

function H.read_bytes(path)
  local f = io.open(path, 'rb')
  if not f then
    return nil
  end
  local data = f:read('*a')
  f:close()
  return data
end

--- The example dump (examples/gpu), or the shared corpus copy.
function H.example_dump()
  local name = 'jit_matmul_fn.fp8_cublaslt.sm90_gpu_after_optimizations.txt'
  local candidates = {
    vim.g.hlo_test_repo .. '/examples/gpu/' .. name,
    '/work/shared/corpus/gpu-from-seeds/' .. name,
  }
  for _, p in ipairs(candidates) do
    if vim.fn.filereadable(p) == 1 then
      return p
    end
  end
  error('example dump not found: ' .. table.concat(candidates, ', '))
end

return H
