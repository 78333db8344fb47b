// The VS Code client: starts `interlock lsp` for .wf files, found in the workspace's .venv, then venv, then on PATH,
// unless the setting interlock.server.command names another command (server.js).
"use strict";
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");
const { serverCommand } = require("./server");

let client;

function activate(context) {
  const configured = vscode.workspace.getConfiguration("interlock").get("server.command");
  const folders = (vscode.workspace.workspaceFolders || []).map((f) => f.uri.fsPath);
  const { command, args } = serverCommand(configured, folders);
  client = new LanguageClient("interlock", "interlock", { command, args },
    { documentSelector: [{ scheme: "file", language: "interlock" }],
      synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher("**/*.wf") } });
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
