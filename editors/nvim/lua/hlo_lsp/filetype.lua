-- Filetype detection for XLA HLO text (see docs/protocol.md, "Documents the
-- server handles"). Used by ftdetect/hlo.vim and by setup().
local M = {}

-- Dump files that sit beside HLO text but are not HLO.
M.excluded_suffixes = {
  '-buffer-assignment.txt',
  '-memory-usage-report.txt',
  '-buffer-assignment-values.txt',
  '-live-range.txt',
}

local function ends_with(s, suffix)
  return suffix == '' or s:sub(-#suffix) == suffix
end

local function basename(path)
  return (path:gsub('\\', '/'):match('[^/]*$'))
end

--- True for dump names that are never HLO text.
function M.is_excluded(path)
  local tail = basename(path)
  for _, suffix in ipairs(M.excluded_suffixes) do
    if ends_with(tail, suffix) then
      return true
    end
  end
  return false
end

--- Decide from the file name alone.
---@return boolean|nil true: HLO; false: not HLO; nil: look at the contents
function M.match_name(path)
  local tail = basename(path or '')
  if tail:match('%.hlo$') then
    return true
  end
  if not tail:match('%.txt$') then
    return false
  end
  if M.is_excluded(tail) then
    return false
  end
  -- module_0001.jit_f.before_optimizations.txt, *.cpu_after_optimizations.txt,
  -- *.sm_9.0_gpu_after_optimizations.txt, *.gfx942_gpu_after_optimizations.txt, ...
  if tail:match('before_optimizations%.txt$') or tail:match('after_optimizations%.txt$') then
    return true
  end
  -- Per-pass dumps: module_0001.jit_f.0004.simplification.after_dce.before_x.txt
  if tail:match('module_%d+%.') and tail:match('%.%d%d%d%d+%.') and tail:match('%.after_') then
    return true
  end
  return nil
end

--- True when the first line starts with `HloModule`.
function M.first_line_is_hlo(line)
  return line ~= nil and line:match('^HloModule') ~= nil
end

--- Filetype for a buffer: 'hlo' or nil (leave it to Neovim's other rules).
---@param path string
---@param bufnr integer|nil
function M.detect(path, bufnr)
  local by_name = M.match_name(path)
  if by_name == true then
    return 'hlo'
  elseif by_name == false then
    return nil
  end
  local first
  if bufnr and vim.api.nvim_buf_is_loaded(bufnr) then
    first = vim.api.nvim_buf_get_lines(bufnr, 0, 1, false)[1]
  end
  if (first == nil or first == '') and path and path ~= '' and vim.fn.filereadable(path) == 1 then
    local ok, lines = pcall(vim.fn.readfile, path, '', 1)
    if ok then
      first = lines[1]
    end
  end
  if M.first_line_is_hlo(first) then
    return 'hlo'
  end
  return nil
end

-- Called from a BufRead/BufNewFile autocmd on Neovim 0.7 (filetype.vim).
function M.detect_autocmd()
  local bufnr = tonumber(vim.fn.expand('<abuf>')) or vim.api.nvim_get_current_buf()
  local path = vim.fn.expand('<amatch>')
  if path == '' then
    path = vim.api.nvim_buf_get_name(bufnr)
  end
  if M.detect(path, bufnr) == 'hlo' and vim.bo[bufnr].filetype ~= 'hlo' then
    -- Overrides the `text` that filetype.vim's `*.txt` rule may have set.
    vim.bo[bufnr].filetype = 'hlo'
  end
end

local registered = false

--- Register the detection rules (idempotent).
function M.register()
  if registered then
    return
  end
  registered = true
  if vim.fn.has('nvim-0.8') == 1 and vim.filetype and vim.filetype.add then
    vim.filetype.add({
      extension = { hlo = 'hlo' },
      pattern = {
        -- A priority >= 0 runs before the `txt` extension rule (-> text).
        ['.*%.txt'] = {
          function(path, bufnr)
            return M.detect(path, bufnr)
          end,
          { priority = 10 },
        },
      },
    })
    return
  end
  -- Neovim 0.7: filetype.vim. Our autocmds run after its `*.txt` rule.
  local group = vim.api.nvim_create_augroup('hlo_lsp_ftdetect', { clear = true })
  vim.api.nvim_create_autocmd({ 'BufNewFile', 'BufRead' }, {
    group = group,
    pattern = '*.hlo',
    command = 'setlocal filetype=hlo',
  })
  vim.api.nvim_create_autocmd({ 'BufNewFile', 'BufRead' }, {
    group = group,
    pattern = '*.txt',
    callback = function()
      M.detect_autocmd()
    end,
  })
end

return M
