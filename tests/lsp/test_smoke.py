from __future__ import annotations

from pathlib import Path

import pytest

from .conftest import session

pytestmark = pytest.mark.asyncio


async def test_smoke(tmp_path: Path) -> None:
    f = tmp_path / "a.wf"
    f.write_text('workflow w {\n  step s { start\n    on on_enter { queue_run(targt: primary) }\n  }\n}\n')
    async with session() as s:
        uri = s.open(f)
        diags = await s.diagnostics(uri)
        print(diags)
        assert diags
