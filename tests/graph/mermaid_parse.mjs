// Mermaid's own parser over Mermaid files: `node mermaid_parse.mjs [--json] NODE_DIR FILE...`.
//
// NODE_DIR is the folder whose node_modules holds `mermaid` and `jsdom` (.ci/node, installed
// by .ci/run from its package.json and package-lock.json). Each FILE is parsed with
// `mermaid.parse`; a file that does not parse is reported as `FILE: error` on stderr.
// Prints `ok FILE DIAGRAM-TYPE` per parsed file, or with --json one JSON object per file: the
// diagram as Mermaid's state-diagram database holds it (nodes: id, label, classes, parent;
// edges: start, end, label), labels decoded as a browser would show them (entity codes
// resolved, `<br>` as a line break). Exits 1 if any file failed, 2 on usage errors.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join, resolve } from "node:path";
import { pathToFileURL } from "node:url";

const argv = process.argv.slice(2);
const asJson = argv[0] === "--json";
const [nodeDir, ...files] = asJson ? argv.slice(1) : argv;
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

// Mermaid keeps entity codes (`#35;`, `#quot;`) as placeholders until it renders; resolve them as
// its renderer does (to HTML entities), then let the DOM decode them and the line breaks.
function shown(label) {
  if (label === undefined || label === null) return null;
  const html = String(label).replace(/ﬂ°°/g, "&#").replace(/ﬂ°/g, "&").replace(/¶ß/g, ";")
    .replace(/<br\s*\/?>/gi, "\n");
  const area = document.createElement("textarea");
  area.innerHTML = html;
  return area.value;
}

let failed = 0;
for (const file of files) {
  const text = readFileSync(file, "utf8");
  try {
    const result = await mermaid.parse(text);
    if (asJson) {
      const diagram = await mermaid.mermaidAPI.getDiagramFromText(text);
      const data = diagram.db.getData();
      const nodes = data.nodes.map((n) => ({
        id: n.id, label: shown(n.label), classes: String(n.cssClasses ?? "").trim().split(/\s+/).filter(Boolean),
        parent: n.parentId ?? null,
      }));
      const edges = data.edges.map((e) => ({ start: e.start, end: e.end, label: shown(e.label) }));
      process.stdout.write(JSON.stringify({ file, type: result.diagramType, nodes, edges }) + "\n");
    } else {
      process.stdout.write(`ok ${file} ${result.diagramType}\n`);
    }
  } catch (err) {
    failed += 1;
    process.stderr.write(`${file}: ${err && err.message ? err.message : String(err)}\n`);
  }
}
process.exit(failed ? 1 : 0);
