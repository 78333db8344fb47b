"""The seed system's (kandev) workflow YAML in and out: `interlock import` / `interlock export` (ADR 0034).

- `yamlread` — a bounded YAML 1.2 reader (ruamel.yaml) that keeps every node's position;
- `formats` — the two formats' keys, triggers, action types and the template loader's allow-lists;
- `diagnostics` — the `KVnnn` codes, located at YAML nodes, rendered like `interlock check`'s;
- `importer` — YAML to formatted `.wf` text, every drop the seed would make silently reported;
- `exporter` — a checked `.wf` back to YAML the seed's loaders accept, refusals reported.
"""
