"""`interlock diff --store URL`: a password in the URL's query is never shown, not in the report's `store` field
(JSON or text) and not in an error."""

from __future__ import annotations

import json
from typing import Any

import pytest

from interlock.cli import main
from interlock.runtime.plan import Plan

SECRET = "Sup3rSecret"


@pytest.mark.postgres
def test_the_json_reports_store_field_masks_a_query_password(pg_url: str, seeder: Any, plans: tuple[Plan, Plan],
                                                             wf_files: Any,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    seeder(pg_url, plans[0])
    url = f"{pg_url}&password={SECRET}&sslpassword={SECRET}"  # trust authentication: the password is not needed
    old, new = wf_files()
    for fmt in ("json", "text"):
        code = main(["diff", str(old), str(new), "--store", url, "--format", fmt])
        out, err = capsys.readouterr()
        assert code == 1, err
        assert SECRET not in out + err
        if fmt == "json":
            store = json.loads(out)["store"]
            assert "password=***" in store and "sslpassword=***" in store


@pytest.mark.parametrize("url", [f"postgresql://alice@127.0.0.1:1/none?password={SECRET}",
                                 f"postgresql://alice:{SECRET}@127.0.0.1:1/none",
                                 f"sqlite:///no/such/folder/x.db?password={SECRET}"])
def test_a_store_error_masks_the_password(url: str, wf_files: Any, capsys: pytest.CaptureFixture[str]) -> None:
    old, new = wf_files()
    assert main(["diff", str(old), str(new), "--store", url]) == 2
    out, err = capsys.readouterr()
    assert SECRET not in out + err and "***" in err
