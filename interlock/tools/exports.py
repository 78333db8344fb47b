"""`interlock export FILE.wf [--yaml-format template|portable] [-o OUT.yml | -o DIR]`: a checked `.wf` out as
kandev's workflow YAML.

The mapping is `interlock.kandev.exporter` (docs/kandev.md).  Only the standard library is imported at the top.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from pathlib import Path

__all__ = ["HELP", "DESCRIPTION", "EPILOG", "FORMATS", "YAML_FORMATS", "STRICT_CODES", "add_arguments", "run"]

HELP = "export .wf workflows as kandev's workflow YAML"
DESCRIPTION = "\n\n".join(textwrap.fill(p, 88) for p in (
    "Compile a `.wf` file and write its workflows as YAML kandev's loaders accept: `--yaml-format template` "
    "(the default: one template per workflow, ids kept, the template loader's per-trigger allow-lists "
    "enforced) or `--yaml-format portable` (one `kandev_workflow` envelope; `move_to_step` by `step_position`).",
    "What the target loader would reject is an error and nothing is written; what the format cannot carry "
    "(the portable format has no generic triggers, stages or ids) is a warning naming it, and with `--strict` "
    "an error (nothing written). With several workflows, `--yaml-format template` needs `-o DIR` (one `ID.yml` "
    "each)."))
EPILOG = textwrap.fill(
    "Exit status: 0 written (warnings allowed); 1 the .wf has errors, the export was refused, or with --strict "
    "something would be dropped; 2 usage or input error.", 88)

FORMATS = ("full", "concise", "json", "sarif", "github")
YAML_FORMATS = ("template", "portable")
STRICT_CODES = ("KV015",)
"""What `--strict` makes an error: something of the `.wf` the YAML format cannot carry."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", metavar="FILE", help="a .wf file, or - for standard input")
    parser.add_argument("--yaml-format", dest="yaml_format", choices=YAML_FORMATS, default="template",
                        help="the YAML format: template or portable (default: template)")
    parser.add_argument("--format", dest="yaml_format", choices=YAML_FORMATS, default=argparse.SUPPRESS,
                        help=argparse.SUPPRESS)  # the old spelling of --yaml-format
    parser.add_argument("-o", "--output", metavar="OUT", help="a .yml file, or an existing folder (one ID.yml per "
                                                             "workflow); default: standard output")
    parser.add_argument("--diagnostics-format", dest="diagnostics_format", choices=FORMATS, default="full",
                        metavar="FORMAT", help="diagnostics format: " + ", ".join(FORMATS) + " (default: full)")
    parser.add_argument("--diagnostics", dest="diagnostics_format", choices=FORMATS, default=argparse.SUPPRESS,
                        help=argparse.SUPPRESS)  # the old spelling of --diagnostics-format
    parser.add_argument("--strict", action="store_true", help="fail (exit 1, nothing written) when the YAML format "
                                                              "cannot carry something of the .wf")
    parser.add_argument("--stdin-filename", metavar="NAME", default="<stdin>", help="name to report for `-`")
    parser.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                        help="colour diagnostics: auto, always or never (default: auto)")
    parser.add_argument("--quiet", "-q", action="store_true", help="print only diagnostics, no summary")


def run(args: argparse.Namespace) -> int:
    from interlock.cmdline import UsageError, not_a_file, output_target
    from interlock.cmdline import use_color as _use_color
    from interlock.compiler import compile_bytes
    from interlock.dsl import parse_bytes
    from interlock.kandev.codes import strict
    from interlock.kandev.exporter import dump_yaml, export_program
    from interlock.kandev.report import emit

    folder: Path | None = None
    target: Path | None = None
    if args.output is not None:
        if Path(args.output).is_dir():
            folder = Path(args.output)
        else:
            target = output_target(args.output, "workflow.yml")
    if args.file == "-":
        shown, data, search = args.stdin_filename, sys.stdin.buffer.read(16 * 1024 * 1024 + 1), Path.cwd()
    else:
        path = Path(args.file)
        if not path.is_file():
            raise UsageError(not_a_file(args.file, "export takes one .wf file", "FILE.wf",
                                        "to write one YAML file per workflow into a folder, give the folder as "
                                        "`-o DIR`"))
        shown, data, search = args.file, path.read_bytes(), path.parent
    result = compile_bytes(shown, data, search_dir=search)
    diagnostics = list(result.diagnostics)
    files: list[tuple[Path | None, str]] = []
    if result.plan is not None and not result.errors:
        module, _ = parse_bytes(shown, data)
        assert module is not None  # it compiled
        exported = export_program(module, result.plan, args.yaml_format)
        found = strict(exported.diagnostics, STRICT_CODES) if args.strict else exported.diagnostics
        diagnostics += found
        if not any(d.is_error for d in found):
            docs = exported.data if isinstance(exported.data, list) else [exported.data or {}]
            if args.yaml_format == "portable" or len(docs) == 1:
                if folder is not None:
                    name = docs[0]["id"] if args.yaml_format == "template" else Path(shown).stem
                    files = [(folder / f"{name}.yml", dump_yaml(exported.data))]
                else:
                    files = [(target, dump_yaml(docs[0] if args.yaml_format == "template" else exported.data))]
            elif folder is None:
                raise UsageError("the file holds several workflows: a template is one workflow, so give -o DIR "
                                 "(one ID.yml each) or --yaml-format portable")
            else:
                files = [(folder / f"{d['id']}.yml", dump_yaml(d)) for d in docs]
    report = sys.stderr if any(p is None for p, _ in files) else sys.stdout
    for where, text in files:
        if where is None:
            sys.stdout.write(text)
            sys.stdout.flush()
        else:
            from interlock.atomic import write_atomic

            write_atomic(where, text)
    if diagnostics or not args.quiet:
        emit(diagnostics, result.sources, args.diagnostics_format, report, color=_use_color(args.color, report),
             files=[shown], written=len(files), quiet=args.quiet)
    return 0 if files else 1
