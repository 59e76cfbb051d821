" Vim syntax file
" Language:    hlo-lsp's pictures as text (:HloGraphText, :HloMemoryText, and :HloGraph /
"              :HloMemory without a browser): operand/user trees, a memory bar chart
" Maintainer:  hlo-lsp
scriptencoding utf-8

if exists('b:current_syntax')
  finish
endif

let s:cpo_save = &cpo
set cpo&vim

syn case match

" Headers: the title, the trees' and the chart's captions.
syn match hloPictureHeader "^\%(dataflow around\|\%(ENTRY \)\?computation\|memory over the schedule\|operands\|users\|root:\|parameters:\|largest buffers\|in \|called by\).*$" contains=hloPictureName
syn match hloPictureHeader "^\s*steps\?\s\+live\s.*$"
" Tree branches: │ ├─ └─ and the operand index before a name.
syn match hloPictureTree "^[│├└─ ]\+\%(\d\+: \)\?"
" Names of instructions (with a buffer's {shape index}).
syn match hloPictureName "%[^ \t]\+"
syn match hloPictureRoot "\<ROOT\ze %"
" Bars in eighths of a cell, and the peak.
syn match hloPictureBar "[▏▎▍▌▋▊▉█]\+"
syn match hloPicturePeak "◀ \%(peak\|most bytes\)$"
" Sizes: 1,048,576 B (1.0 MiB), 2.1 MiB.
syn match hloPictureBytes "\<\d[0-9,.]*\s\%(B\|KiB\|MiB\|GiB\|TiB\|PiB\)\>\%(\s(\d[0-9.]*\s\a\+)\)\?"
" What lies elsewhere: (above), (below), (+3 users), ... N more.
syn match hloPictureElsewhere "(\%(above\|below\|again\|the center\|+\d\+ \%(operands\?\|users\?\)\))$"
syn match hloPictureNote "^\%(note: \|  \.\.\. \|the buffer assignment \).*$"

hi def link hloPictureHeader Title
hi def link hloPictureTree Comment
hi def link hloPictureName Identifier
hi def link hloPictureRoot Keyword
hi def link hloPictureBar Special
hi def link hloPicturePeak WarningMsg
hi def link hloPictureBytes Number
hi def link hloPictureElsewhere Comment
hi def link hloPictureNote Comment

let b:current_syntax = 'hlopicture'

let &cpo = s:cpo_save
unlet s:cpo_save
