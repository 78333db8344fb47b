"""Credentials in a store's URL are masked everywhere it is shown: one function (`stores.masking.mask_credentials`)
covers every form SQLAlchemy and libpq accept, and the CLI's errors, reports and a store's repr go through it."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import quote

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from interlock.cli import main
from interlock.runtime.store import StoreError
from interlock.stores import open_store
from interlock.stores.engine import check_url, display_url, store_error
from interlock.stores.masking import MASK, mask_credentials, scrub

# a password as a user may write it: letters, digits, punctuation, spaces and non-ASCII text
PASSWORDS = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=24)

# where a password may stand, as (template, how the password is written there); `{}` is its place
URL_FORMS = [
    ("postgresql://alice:{}@db.example:5432/app", "userinfo"),
    ("postgresql+psycopg://alice:{}@db.example/app?sslmode=require", "userinfo"),
    ("postgres://alice:{}@db.example,replica.example:5433/app", "userinfo"),
    ("postgresql://alice@db.example/app?password={}", "query"),
    ("postgresql://alice@db.example/app?sslmode=require&password={}&application_name=x", "query"),
    ("postgresql://alice@db.example/app?sslpassword={}&sslkey=/keys/k.pem", "query"),
    ("postgresql://alice@db.example/app?PASSWORD={}", "query"),
    ("postgresql://alice@db.example/app?PassWord={}&passfile=/home/a/.pgpass", "query"),
    ("postgresql://alice@db.example/app?pass%77ord={}", "query"),
    ("postgresql:///app?host=/run/postgresql&password={}", "query"),
    ("sqlite:///store.db?uri=true&password={}", "query"),
    ("host=db.example port=5432 password={} dbname=app", "conninfo"),
    ("password={} host=db.example", "conninfo"),
    ("host=db.example sslpassword = {}", "conninfo"),
    ("host=db.example PASSWORD={} user=alice", "conninfo"),
]


def _written(password: str, how: str) -> str:
    if how in ("userinfo", "query"):
        return quote(password, safe="")
    if password.isprintable() and not any(c.isspace() or c in "'\\" for c in password):
        return password  # libpq takes a plain word unquoted
    return "'" + password.replace("\\", "\\\\").replace("'", "\\'") + "'"


@pytest.mark.parametrize(("template", "how"), URL_FORMS)
@given(password=PASSWORDS)
def test_a_password_in_any_accepted_place_is_masked_and_the_rest_kept(template: str, how: str,
                                                                     password: str) -> None:
    written = _written(password, how)
    expected = template.replace("{}", MASK)
    assume(written not in expected and password not in expected)
    url = template.replace("{}", written)
    masked = mask_credentials(url)
    assert masked == expected
    assert written not in masked and password not in masked


@given(first=PASSWORDS, second=PASSWORDS)
def test_repeated_keys_and_two_places_at_once_are_all_masked(first: str, second: str) -> None:
    a, b = quote(first, safe=""), quote(second, safe="")
    url = f"postgresql://alice:{a}@h/app?password={b}&sslmode=disable&password={a}&sslpassword={b}"
    assert mask_credentials(url) == f"postgresql://alice:{MASK}@h/app?password={MASK}&sslmode=disable" \
                                    f"&password={MASK}&sslpassword={MASK}"


def test_what_is_not_a_secret_is_shown() -> None:
    for url in ("postgresql://alice@db/app?passfile=/home/a/.pgpass&sslkey=/k.pem",
                "postgresql://db.example:5432/app", "sqlite:///a:b@c.db", "host=db user=alice passfile=/p",
                "postgresql://alice:@db/app"):
        assert mask_credentials(url) == url


def test_an_at_sign_in_a_password_masks_more_never_less() -> None:
    masked = mask_credentials("postgresql://alice:p@ss@db.example/app")
    assert "p@ss" not in masked and "ss" not in masked.split("@")[0]


def test_scrub_masks_a_secret_quoted_anywhere_in_a_message() -> None:
    url = "postgresql://alice:hunter22@db/app?sslpassword=s%20x"
    message = f"could not parse {url}: near 'hunter22' (s x)"
    assert scrub(message, url) == f"could not parse {mask_credentials(url)}: near '{MASK}' ({MASK})"


@pytest.mark.parametrize("url", [
    "postgresql://alice@127.0.0.1:1/none?password=Sup3rSecret",
    "postgresql://alice:Sup3rSecret@127.0.0.1:1/none",
    "postgresql://alice@127.0.0.1:1/none?sslmode=disable&PASSWORD=Sup3rSecret",
])
def test_store_errors_and_repr_never_show_the_password(url: str) -> None:
    with pytest.raises(StoreError) as info:
        open_store(url)
    assert "Sup3rSecret" not in str(info.value)
    assert MASK in str(info.value)
    assert "Sup3rSecret" not in display_url(url)


def test_an_unparseable_url_is_masked_in_the_message() -> None:
    for url in ("postgresql://alice:Sup3rSecret@db:notaport/app", "host=db password=Sup3rSecret dbname=x"):
        with pytest.raises(StoreError) as info:
            check_url(url)
        assert "Sup3rSecret" not in str(info.value), str(info.value)


def test_a_driver_message_quoting_the_secret_is_scrubbed() -> None:
    from sqlalchemy.exc import OperationalError

    url = "postgresql://alice@db/app?password=Sup3rSecret"
    exc = OperationalError("connect", {}, Exception("bad conninfo: password=Sup3rSecret near 'Sup3rSecret'"))
    assert "Sup3rSecret" not in str(store_error(exc, url, "connecting"))


def test_sqlstore_repr_masks_a_query_password(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///file:{tmp_path}/s.db?uri=true&password=Sup3rSecret")
    try:
        assert "Sup3rSecret" not in repr(store) and f"password={MASK}" in repr(store)
    finally:
        close = getattr(store, "close", None)
        if close is not None:
            close()


@pytest.mark.parametrize("argv", [
    ["db", "current", "--url", "postgresql://alice@127.0.0.1:1/none?password=Sup3rSecret"],
    ["db", "upgrade", "--url", "postgresql://alice@127.0.0.1:1/none?sslpassword=Sup3rSecret"],
    ["db", "current", "--url", "mysql://alice@db/none?password=Sup3rSecret"],
    ["simulate", "-", "--store", "oracle://alice:Sup3rSecret@db/none"],
])
def test_cli_errors_never_show_the_password(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert "Sup3rSecret" not in out + err and MASK in err
