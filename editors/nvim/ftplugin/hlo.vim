" Filetype plugin for XLA HLO text.
if exists('b:did_ftplugin')
  finish
endif
let b:did_ftplugin = 1

setlocal commentstring=//\ %s
setlocal comments=s1:/*,mb:*,ex:*/,://

" HLO names such as %fused_computation.3 or %all-reduce-start.1 are one word
" for *, gd, ciw...: '.' (46) and '-' (45) are keyword characters.
setlocal iskeyword=@,48-57,_,192-255,45,46

let b:undo_ftplugin = 'setlocal commentstring< comments< iskeyword<'
