"""`interlock explain CODE` (ADR 0039): a code's page from the documentation the package carries; every code has one;
unknown codes get the nearest one and exit 2; links (SARIF `helpUri`, the language server's `codeDescription`)
point at the page, or at the project's `docs_url`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from interlock.cli import main
from interlock.diagnostic_pages import help_url, known_codes, page, page_uri
from interlock.dsl.diagnostics import CODES
from interlock.kandev.codes import KVCODES

ROOT = Path(__file__).resolve().parents[2]
BAD = "workflow w {\n  step a { start terminal  on on_enter { queue_run(targt: primary) } }\n}\n"


def test_every_code_has_a_page() -> None:
    pages = known_codes()
    assert set(CODES) <= set(pages)
    assert {info.code for info in KVCODES.values()} <= set(pages)
    for name, info in KVCODES.items():
        assert (pages[info.code].name, pages[info.code].severity) == (name, info.severity.value)
    for code, info in CODES.items():
        assert (pages[code].name, pages[code].severity) == (info.name, info.severity.value)


def test_explain_prints_the_section_of_the_docs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "il504"]) == 0
    out = capsys.readouterr().out
    docs = (ROOT / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    assert out.startswith("## IL504 unreachable-step\n") and out.strip() in docs
    assert "**Fix:**" in out and "```wf" in out


def test_a_codes_name_works_too(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "unknown-parameter"]) == 0
    assert capsys.readouterr().out.startswith("## IL102 unknown-parameter")


@pytest.mark.parametrize(("given", "meant"), [("IL1O2", "IL102"), ("IL5004", "IL504"), ("unknown-paramter", "IL102"),
                                              ("KV230", "KV023")])
def test_an_unknown_code_gets_the_nearest_and_exit_2(capsys: pytest.CaptureFixture[str], given: str,
                                                     meant: str) -> None:
    assert main(["explain", given]) == 2
    err = capsys.readouterr().err
    assert f"no diagnostic code `{given}`" in err and f"did you mean `{meant}`" in err


def test_list_names_every_code(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain", "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "IL102  unknown-parameter  (error)" in lines and "KV023  guard-not-expressible  (error)" in lines
    assert len(lines) == len(CODES) + len(KVCODES)


def test_no_code_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["explain"]) == 2


def test_links_point_at_the_page_here_or_at_the_configured_template() -> None:
    uri = page_uri("IL102", "unknown-parameter")
    assert uri is not None and uri.endswith("docs/diagnostics.md#il102-unknown-parameter")
    assert Path(uri.removeprefix("file://").split("#")[0]).is_file()
    assert help_url("IL102", "unknown-parameter", "https://example.org/d/{code}.html") == \
        "https://example.org/d/IL102.html"
    assert page("IL102") is not None


def test_sarif_help_uri_follows_the_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.wf").write_text(BAD)
    assert main(["check", "--format", "sarif", "bad.wf"]) == 1
    rules = json.loads(capsys.readouterr().out)["runs"][0]["tool"]["driver"]["rules"]
    assert all(r["helpUri"].startswith("file://") for r in rules)
    (tmp_path / "interlock.toml").write_text('docs_url = "https://example.org/interlock#{code}"\n')
    assert main(["check", "--format", "sarif", "bad.wf"]) == 1
    rules = json.loads(capsys.readouterr().out)["runs"][0]["tool"]["driver"]["rules"]
    assert rules[list(CODES).index("IL102")]["helpUri"] == "https://example.org/interlock#IL102"


def test_the_language_servers_code_description(tmp_path: Path) -> None:
    from interlock.lsp.analysis import analyse
    from interlock.lsp.convert import Locator, to_lsp_diagnostic

    path = tmp_path / "bad.wf"
    path.write_text(BAD)
    analysis = analyse(str(path), BAD, 1, path)
    (d,) = [to_lsp_diagnostic(d, Locator(analysis, path.as_uri(), "utf-16")) for d in analysis.diagnostics]
    assert d.code_description is not None and d.code_description.href.endswith("#il102-unknown-parameter")
    (tmp_path / "interlock.toml").write_text('docs_url = "https://example.org/x/{code}"\nignore = ["IL504"]\n')
    analysis = analyse(str(path), BAD, 2, path)
    (d,) = [to_lsp_diagnostic(d, Locator(analysis, path.as_uri(), "utf-16")) for d in analysis.diagnostics]
    assert d.code_description is not None and d.code_description.href == "https://example.org/x/IL102"


def test_the_language_server_honours_the_configurations_ignore(tmp_path: Path) -> None:
    from interlock.lsp.analysis import analyse

    text = BAD.replace("queue_run(targt: primary)", "queue_run").replace("}\n}", "}\n  step b { terminal }\n}")
    path = tmp_path / "w.wf"
    assert [d.code for d in analyse(str(path), text, 1, path).diagnostics] == ["IL504"]
    (tmp_path / "pyproject.toml").write_text('[tool.interlock]\nignore = ["IL504"]\n')
    assert analyse(str(path), text, 2, path).diagnostics == ()
