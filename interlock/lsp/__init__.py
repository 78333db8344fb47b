"""`interlock lsp`: the language server for `.wf` files (ADR 0030).

Small modules, each one job: `positions` (LSP position encodings <-> the compiler's code-point
columns), `analysis` (one document's compile, kept as the cache every request reads), `index`
(every name occurrence of an analysis: declarations and references), `convert` (diagnostics to LSP),
`features` (hover, definition, completion, symbols, rename, formatting, code actions) and `server`
(the pygls server: documents, debounce, publishing).  Only `server` imports pygls; the others import
lsprotocol's types at most, and the compiler only inside functions, so `initialize` is answered
before the prelude loads.
"""
