#!/usr/bin/env bash
# Regenerate docs/editor.png: Neovim in an xterm under Xvfb, attached to `interlock lsp`, showing a diagnostic
# and a hover. Needs Debian's neovim xvfb xterm x11-apps imagemagick, and `interlock` with the lsp extra on PATH
# (or INTERLOCK=/path/to/interlock). Not run by CI.  Usage: bash editors/screenshot.sh [OUT.png]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT=${1:-docs/editor.png}
INTERLOCK=${INTERLOCK:-$(command -v interlock || echo "$PWD/.venv/bin/interlock")}
WORK=$(mktemp -d)
trap 'kill "${XVFB_PID:-}" "${XTERM_PID:-}" 2>/dev/null || true; rm -rf "$WORK"' EXIT
cat > "$WORK/review.wf" <<'WF'
# review.wf: a misspelt parameter
workflow review "Review" {
  step work "Work" {
    start
    on on_enter { queue_run(targt: primary, reason: "started") }
    on on_turn_complete { move_to_step(done) }
  }
  step done "Done" { terminal }
}
WF
cat > "$WORK/init.lua" <<LUA
vim.o.termguicolors = false
vim.o.signcolumn = "yes"
vim.diagnostic.config({ virtual_text = true })
vim.api.nvim_create_autocmd("VimEnter", { callback = function()
  vim.cmd("syntax on")
  local id = vim.lsp.start_client({ name = "interlock", cmd = { "$INTERLOCK", "lsp" }, root_dir = "$WORK" })
  vim.lsp.buf_attach_client(0, id)
  vim.wait(10000, function() return #vim.diagnostic.get(0) > 0 end, 50)
  vim.api.nvim_win_set_cursor(0, { 6, 28 })            -- on move_to_step
  vim.defer_fn(function() vim.lsp.buf.hover() end, 500)
end })
LUA
Xvfb :57 -screen 0 1000x420x24 >/dev/null 2>&1 & XVFB_PID=$!
sleep 1
DISPLAY=:57 xterm -geometry 110x22+0+0 -fa Monospace -fs 11 -bg black -fg white \
    -e nvim -n -i NONE -u "$WORK/init.lua" "$WORK/review.wf" & XTERM_PID=$!
sleep 8
DISPLAY=:57 xwd -root -silent | convert xwd:- -crop 1000x420+0+0 "$OUT"
echo "wrote $OUT"
