-- Neovim (0.7+) headless: attach `interlock lsp` with the built-in client, wait for the diagnostic, ask for hover
-- and definition, format, and write what came back as JSON to the file named by $INTERLOCK_NVIM_OUT.
local out = {}
local buf = vim.api.nvim_get_current_buf()
local cmd = { os.getenv("INTERLOCK_EXE"), "lsp" }
local id = vim.lsp.start_client({ name = "interlock", cmd = cmd, root_dir = vim.fn.getcwd() })
vim.lsp.buf_attach_client(buf, id)
local client = vim.lsp.get_client_by_id(id)
out.attached = vim.wait(10000, function() return #vim.diagnostic.get(buf) > 0 end, 50)
out.diagnostics = {}
for _, d in ipairs(vim.diagnostic.get(buf)) do
  table.insert(out.diagnostics, { lnum = d.lnum, col = d.col, code = d.code, message = d.message })
end
local function at(line, col)
  return { textDocument = { uri = vim.uri_from_bufnr(buf) }, position = { line = line, character = col } }
end
local hover = client.request_sync("textDocument/hover", at(tonumber(os.getenv("HOVER_LINE")), tonumber(os.getenv("HOVER_COL"))), 5000, buf)
out.hover = hover and hover.result and hover.result.contents.value or vim.NIL
local def = client.request_sync("textDocument/definition", at(tonumber(os.getenv("DEF_LINE")), tonumber(os.getenv("DEF_COL"))), 5000, buf)
out.definition = def and def.result or vim.NIL
if vim.lsp.buf.format then vim.lsp.buf.format({ timeout_ms = 5000 }) else vim.lsp.buf.formatting_sync(nil, 5000) end
out.formatted = table.concat(vim.api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
local fh = io.open(os.getenv("INTERLOCK_NVIM_OUT"), "w")
fh:write(vim.fn.json_encode(out))
fh:close()
vim.cmd("qa!")
