" Vim syntax file
" Language:    XLA HLO text (HloModule dumps, *.hlo)
" Maintainer:  hlo-lsp
" Used when tree-sitter is not available for `hlo`. Metadata is dimmed like a
" comment; definitions of instructions and computations are highlighted
" differently from their uses.

if exists('b:current_syntax')
  finish
endif

let s:cpo_save = &cpo
set cpo&vim

syn case match
" Dumps can have very long lines (backend_config, constants).
syn sync minlines=20 maxlines=200

" ---------------------------------------------------------------- names
" Uses of instructions: %name (operands, control-predecessors, ...).
syn match hloInstrRef "%[A-Za-z_][A-Za-z0-9_.-]*"

" Parameter names in a computation header: (param_0: f32[2], p1: ...)
syn match hloParamName "\%([(,]\s*\)\@<=%\?[A-Za-z_][A-Za-z0-9_.-]*\ze:\s"

" Definitions (defined after the uses so they win at the same column).
"   [ENTRY] %name (params) -> shape {
syn match hloComputationDef "\%(^\s*\%(ENTRY\s\+\)\?\)\@<=%\?[A-Za-z_][A-Za-z0-9_.-]*\ze\s*[({]"
"   [ROOT] %name = shape opcode(...)
syn match hloInstrDef "\%(^\s*\%(ROOT\s\+\)\?\)\@<=%\?[A-Za-z_][A-Za-z0-9_.-]*\ze\s\+=\s"

" ---------------------------------------------------------------- keywords
syn keyword hloModuleKeyword HloModule nextgroup=hloModuleName skipwhite
syn match hloModuleName contained "%\?[A-Za-z_][A-Za-z0-9_.-]*"
syn keyword hloKeyword ENTRY ROOT
syn keyword hloKeyword FileNames FunctionNames FileLocations StackFrames
syn keyword hloBoolean true false
syn keyword hloFloat inf nan
syn match hloFloat "-inf\>"
syn keyword hloConstant maximal replicated manual last_tile_dim_replicate shard_as shard_like unreduced
syn keyword hloConstant kLoop kInput kOutput kCustom
syn keyword hloConstant EQ NE LT LE GT GE

" ---------------------------------------------------------------- numbers
syn match hloNumber "\%([A-Za-z0-9_.$%-]\)\@<!-\?\d\+\%(\.\d\+\)\?\%([eE][+-]\?\d\+\)\?\%([A-Za-z0-9_.]\)\@!"
syn match hloNumber "\%([A-Za-z0-9_.$%-]\)\@<!0x\x\+\>"
" window sizes 3x3, paddings 0_0x1_1
syn match hloNumber "\%([A-Za-z0-9_.$%-]\)\@<!\d\+\%([_x]\d\+\)\+\>"
" convolution dim labels b01f_01io->b01f
syn match hloDimLabels "\<[0-9bf?]\{2,}_[0-9io?]\{2,}->[0-9bf?]\{2,}"

" ---------------------------------------------------------------- opcodes
" An opcode is a lower-case word directly followed by its operand list.
syn match hloOpcode "\%([%A-Za-z0-9_.$-]\)\@<![a-z][a-z0-9-]*\ze("

" ---------------------------------------------------------------- shapes
" f32[2,3]{1,0}, token[], (s32[], f8e4m3fn[128,128]{1,0:T(8,128)})
syn match hloType "\%([A-Za-z0-9_.$%-]\)\@<!\%(pred\|[suf]\d\+\|bf16\|c64\|c128\|f8e[0-9a-z]\+\|f4e2m1fn\|f6e[0-9a-z]\+\|token\|opaque\)\ze\[" nextgroup=hloDims
syn match hloDims contained "\[[^\]]*\]" nextgroup=hloLayout
syn match hloLayout contained "{[^{}]*}"

" ---------------------------------------------------------------- attributes
syn match hloAttrName "\%([%A-Za-z0-9_.$-]\)\@<![A-Za-z_][A-Za-z0-9_-]*\ze=\%(=\)\@!"

" Attributes naming computations (go-to-definition targets).
syn match hloCallAttr "\<\%(calls\|to_apply\|condition\|body\|select\|scatter\|true_computation\|false_computation\|comparator\)=" nextgroup=hloComputationRef
syn match hloComputationRef contained "%\?[A-Za-z_][A-Za-z0-9_.-]*"
syn match hloCallListAttr "\<\%(branch_computations\|called_computations\)=" nextgroup=hloComputationList
syn region hloComputationList contained start="{" end="}" contains=hloComputationListRef,hloComment
syn match hloComputationListRef contained "%\?[A-Za-z_][A-Za-z0-9_.-]*"

" ---------------------------------------------------------------- strings, comments
syn match hloEscape contained +\\\%(["'\\nrtbfv]\|x\x\+\|\o\{1,3}\)+
syn region hloString start=+"+ skip=+\\\\\|\\"+ end=+"+ oneline contains=hloEscape
syn region hloString start=+'+ skip=+\\\\\|\\'+ end=+'+ oneline contains=hloEscape

syn keyword hloTodo contained TODO FIXME XXX NOTE
syn region hloComment start="/\*" end="\*/" contains=hloTodo,@Spell
syn match hloComment "//.*$" contains=hloTodo,@Spell

" ---------------------------------------------------------------- metadata (dimmed)
" metadata={op_type="dot" op_name="jit(f)/dot_general" source_file="x.py" source_line=3}
syn region hloMetadata start="\<metadata={" end="}" contains=hloMetadataString
syn region hloMetadataString contained start=+"+ skip=+\\\\\|\\"+ end=+"+

" ---------------------------------------------------------------- backend_config
" JSON for GPU protos, an MLIR attribute dictionary for typed-FFI / Triton calls,
" or a quoted string.
syn match hloBackendConfigAttr "\<backend_config=" nextgroup=hloBackendConfig,hloString
syn region hloBackendConfig contained matchgroup=hloBackendConfigDelim start="{" end="}" contains=@hloBackendConfigItems
syn region hloBackendConfigNested contained transparent start="{" end="}" contains=@hloBackendConfigItems
syn region hloBackendConfigNested contained transparent start="\[" end="\]" contains=@hloBackendConfigItems
syn match hloJsonKey contained +"\%([^"\\]\|\\.\)*"\ze\s*:+
syn match hloJsonKey contained "\<[A-Za-z_][A-Za-z0-9_]*\ze\s*="
syn keyword hloJsonNull contained null
syn cluster hloBackendConfigItems contains=hloBackendConfigNested,hloString,hloJsonKey,hloNumber,hloBoolean,hloJsonNull,hloFloat

" ---------------------------------------------------------------- links
hi def link hloComment            Comment
hi def link hloTodo               Todo
hi def link hloString             String
hi def link hloEscape             SpecialChar
hi def link hloNumber             Number
hi def link hloFloat              Float
hi def link hloBoolean            Boolean
hi def link hloConstant           Constant
hi def link hloDimLabels          Constant
hi def link hloKeyword            Keyword
hi def link hloModuleKeyword      hloKeyword
hi def link hloModuleName         Title
hi def link hloOpcode             Statement
hi def link hloType               Type
hi def link hloDims               Type
hi def link hloLayout             Special
hi def link hloAttrName           Label
hi def link hloCallAttr           hloAttrName
hi def link hloCallListAttr       hloAttrName
hi def link hloComputationDef     Title
hi def link hloComputationRef     Function
hi def link hloComputationListRef hloComputationRef
hi def link hloInstrDef           Define
hi def link hloInstrRef           Identifier
hi def link hloParamName          Identifier
hi def link hloMetadata           Comment
hi def link hloMetadataString     hloMetadata
hi def link hloBackendConfigAttr  PreProc
hi def link hloBackendConfigDelim Delimiter
hi def link hloJsonKey            Identifier
hi def link hloJsonNull           Constant

let b:current_syntax = 'hlo'

let &cpo = s:cpo_save
unlet s:cpo_save
