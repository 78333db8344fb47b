-- Run after docs/editors.md's snippet was loaded as init.lua (Neovim 0.7+ headless, a .wf file open): wait for the
-- server the snippet started, ask it for semantic tokens, and write what Neovim saw as JSON to $INTERLOCK_NVIM_OUT.
local out = {}
local buf = vim.api.nvim_get_current_buf()
out.filetype = vim.bo[buf].filetype
local function clients()
  local found = {}
  for _, c in pairs(vim.lsp.buf_get_clients(buf)) do table.insert(found, c) end
  return found
end
out.attached = vim.wait(15000, function() return #clients() > 0 and #vim.diagnostic.get(buf) > 0 end, 50)
local attached = clients()
out.clients = {}
for _, c in ipairs(attached) do table.insert(out.clients, c.name) end
out.diagnostics = {}
for _, d in ipairs(vim.diagnostic.get(buf)) do
  table.insert(out.diagnostics, { lnum = d.lnum, col = d.col, code = d.code })
end
local client = attached[1]
if client then
  local caps = client.server_capabilities or {}
  local provider = caps.semanticTokensProvider or {}
  out.legend = provider.legend or vim.NIL
  local reply = client.request_sync("textDocument/semanticTokens/full",
    { textDocument = { uri = vim.uri_from_bufnr(buf) } }, 10000, buf)
  out.tokens = reply and reply.result and reply.result.data or vim.NIL
  out.lines = vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end
local fh = io.open(os.getenv("INTERLOCK_NVIM_OUT"), "w")
fh:write(vim.fn.json_encode(out))
fh:close()
vim.cmd("qa!")
