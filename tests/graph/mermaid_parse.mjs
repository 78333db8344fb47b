// Mermaid's own parser over Mermaid files: `node mermaid_parse.mjs NODE_DIR FILE...`.
//
// NODE_DIR is the folder whose node_modules holds `mermaid` and `jsdom` (.ci/node, installed
// by .ci/run from its package.json and package-lock.json). Each FILE is parsed with
// `mermaid.parse`; a file that does not parse is reported as `FILE: error` on stderr.
// Prints `ok FILE DIAGRAM-TYPE` per parsed file; exits 1 if any file failed, 2 on usage errors.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const [nodeDir, ...files] = process.argv.slice(2);
if (!nodeDir || files.length === 0) {
  process.stderr.write("usage: node mermaid_parse.mjs NODE_DIR FILE...\n");
  process.exit(2);
}
const require = createRequire(join(resolve(nodeDir), "package.json"));
const load = async (name) => import(pathToFileURL(require.resolve(name)).href);

// Mermaid reaches for a DOM (DOMPurify, d3) even to parse: give it jsdom's.
const { JSDOM } = await load("jsdom");
const dom = new JSDOM("<!DOCTYPE html><html><body></body></html>");
globalThis.window = dom.window;
globalThis.document = dom.window.document;
for (const name of ["Element", "HTMLElement", "SVGElement", "Node", "DOMParser", "MutationObserver"]) {
  if (globalThis[name] === undefined) globalThis[name] = dom.window[name];
}

const mermaid = (await load("mermaid")).default;
mermaid.initialize({ startOnLoad: false });

let failed = 0;
for (const file of files) {
  const text = readFileSync(file, "utf8");
  try {
    const result = await mermaid.parse(text);
    process.stdout.write(`ok ${file} ${result.diagramType}\n`);
  } catch (err) {
    failed += 1;
    process.stderr.write(`${file}: ${err && err.message ? err.message : String(err)}\n`);
  }
}
process.exit(failed ? 1 : 0);
