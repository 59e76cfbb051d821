" Filetype detection for XLA HLO text: *.hlo, XLA dump files
" (*before_optimizations.txt, *after_optimizations.txt, per-pass dumps) and any
" *.txt whose first line starts with `HloModule`. Never *-buffer-assignment.txt,
" *-memory-usage-report.txt, *-buffer-assignment-values.txt, *-live-range.txt.
" Works from Neovim 0.7 (filetype.vim) to the current release (vim.filetype).
"
" The module is loaded by path, not with require(), so that plugin managers that
" lazy-load on require (lazy.nvim) do not load the whole plugin at startup.
if !has('nvim-0.7')
  finish
endif
call luaeval('(function(path)'
      \ . ' local m = package.loaded["hlo_lsp.filetype"] or dofile(path)'
      \ . ' package.loaded["hlo_lsp.filetype"] = m'
      \ . ' m.register()'
      \ . ' end)(_A)', expand('<sfile>:p:h:h') . '/lua/hlo_lsp/filetype.lua')
