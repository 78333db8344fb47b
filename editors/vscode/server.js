// Where the VS Code client finds `interlock lsp`: a pure function of the setting and the workspace folders, so that
// it is tested with Node alone (tests/lsp/test_vscode_extension.py), without VS Code.
"use strict";
const fs = require("fs");
const path = require("path");

const DEFAULT_COMMAND = ["interlock", "lsp"];

// The interlock executable inside a virtual environment folder, for this platform.
function venvExecutable(venv, platform) {
  return platform === "win32" ? path.join(venv, "Scripts", "interlock.exe") : path.join(venv, "bin", "interlock");
}

function isFile(file) {
  try {
    return fs.statSync(file).isFile();
  } catch (err) {
    return false;
  }
}

// The command to start: the setting `interlock.server.command` when the user changed it; otherwise the `interlock`
// of the first workspace folder's `.venv`, then of its `venv` (folders in order), then `interlock` on PATH.
function serverCommand(configured, folders, platform = process.platform, exists = isFile) {
  const custom = Array.isArray(configured) && configured.length > 0 &&
    JSON.stringify(configured) !== JSON.stringify(DEFAULT_COMMAND);
  if (custom) {
    return { command: configured[0], args: configured.slice(1), source: "setting" };
  }
  for (const folder of folders || []) {
    for (const venv of [".venv", "venv"]) {
      const exe = venvExecutable(path.join(folder, venv), platform);
      if (exists(exe)) {
        return { command: exe, args: ["lsp"], source: venv };
      }
    }
  }
  return { command: DEFAULT_COMMAND[0], args: DEFAULT_COMMAND.slice(1), source: "PATH" };
}

module.exports = { serverCommand, venvExecutable, DEFAULT_COMMAND };
