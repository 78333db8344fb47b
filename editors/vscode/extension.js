// The VS Code client: starts `interlock lsp` (the command in the setting interlock.server.command) for .wf files.
"use strict";
const vscode = require("vscode");
const { LanguageClient } = require("vscode-languageclient/node");

let client;

function activate(context) {
  const [command, ...args] = vscode.workspace.getConfiguration("interlock").get("server.command", ["interlock", "lsp"]);
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
