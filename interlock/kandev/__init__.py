"""kandev's workflow YAML in and out: `interlock import` / `interlock export` (ADR 0034, ADR 0043).

- `yamlread` — a bounded YAML 1.2 reader (ruamel.yaml) that keeps every node's position and finds the comments;
- `formats` — the two formats' keys, triggers, action types and the template loader's allow-lists;
- `diagnostics` — the `KVnnn` codes, located at YAML nodes, rendered like `interlock check`'s;
- `reading`, `actions`, `steps`, `importer` — YAML to formatted `.wf` text: typed reads, actions, steps,
  documents; every drop kandev would make silently and every place the `.wf` behaves differently reported;
- `placing` — the YAML's comments at the nearest place in the `.wf` text;
- `exporter` — a checked `.wf` back to YAML kandev's loaders accept, refusals and drops reported.
"""
