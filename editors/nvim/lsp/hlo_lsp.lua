-- Default client config for Neovim 0.11+ (`:help lsp-config`): with this
-- plugin on 'runtimepath', `vim.lsp.enable('hlo_lsp')` works without setup().
-- require('hlo_lsp').setup() layers its options on top of this file.
return {
  cmd = { 'hlo-lsp' },
  filetypes = { 'hlo' },
  root_markers = { '.git', 'pyproject.toml', 'setup.py' },
  on_attach = function(client, bufnr)
    require('hlo_lsp').on_attach(client, bufnr)
  end,
}
