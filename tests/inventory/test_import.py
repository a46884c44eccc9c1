"""File import (channel FileImport) and the Data Flow command: the service, then the real CLI."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from decimal import Decimal
from pathlib import Path

import httpx
import pytest

from marketsync.http.errors import NotFound, ValidationFailed
from marketsync.inventory import service
from marketsync.runtime import Runtime
from tests.conftest import TEST_ENCRYPTION_KEYS, TEST_HASH_KEY
from tests.inventory.support import add_listing, add_products, inventory_events, jobs_of, payloads, stored
from tests.support.factories import make_tenant


def write_csv(path: Path, lines: list[str]) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


async def test_import_applies_good_rows_and_reports_bad_ones(
    rt: Runtime, api: httpx.AsyncClient, tmp_path: Path
) -> None:
    tenant = await make_tenant(rt, api, marketplaces=(("P1", "UK"),))
    ids = await add_products(
        rt, tenant.account_id, [("A", "1.00", 1), ("B", "2.00", 2), ("C", "3.00", 3), ("dup", "1", 1), ("DUP", "1", 1)]
    )
    await add_listing(rt, tenant.account_id, ids["A"], tenant.marketplace("P1").id)
    csv_file = write_csv(
        tmp_path / "stock.csv",
        [
            "\ufeffSku,Price,Quantity",
            "A,1.10,",  # line 2: price only
            "B,abc,5",  # line 3: bad price, whole row refused
            "C,,-4",  # line 4: negative quantity
            "MISSING,1,1",  # line 5
            "Dup,1,2",  # line 6: ambiguous
            "",  # blank line skipped
            "B,2.00,2",  # line 8: equal: unchanged
            ",1,1",  # line 9: no SKU
            "C,3.00001,3",  # line 10: five decimals
            "C,,0",  # line 11: quantity zero
        ],
    )

    report = await service.import_inventory_file(rt, tenant.account_id, csv_file)

    assert report.rows == 9
    assert report.counts == {"Updated": 2, "Unchanged": 1, "NotFound": 1, "Ambiguous": 1, "Failed": 0}
    assert report.invalid == 4
    assert [(e.line, e.sku) for e in report.errors] == [
        (3, "B"),
        (4, "C"),
        (5, "MISSING"),
        (6, "Dup"),
        (9, None),
        (10, "C"),
    ]
    assert "Price" in report.errors[0].message and "Quantity" in report.errors[1].message
    after = await stored(rt, tenant.account_id)
    assert after["A"][:2] == (Decimal("1.10"), 1)
    assert after["B"][:2] == (Decimal("2.00"), 2)
    assert after["C"][:2] == (Decimal("3.00"), 0)
    [event] = payloads(await inventory_events(rt, tenant.account_id))
    assert event["source"] == {"writer": "MerchantPush", "channel": "FileImport", "userPlatformId": None}
    assert event["changed"] == [
        {"sku": "A", "price": 1.1, "quantity": None},
        {"sku": "C", "price": None, "quantity": 0},
    ]
    assert len(report.job_ids) == 1 and [j.id for j in await jobs_of(rt, tenant.account_id)] == report.job_ids
    assert report.events == 1


async def test_a_file_with_a_row_that_is_not_csv_is_refused_before_any_row_is_applied(
    rt: Runtime, api: httpx.AsyncClient, tmp_path: Path
) -> None:
    """The CLI's import reads the file ahead (superseded rows) before its first batch: a row that is not CSV, 600
    rows in, is refused there, with the rows before it not applied either."""
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("A", "1.00", 1)])
    rows = ["Sku,Price,Quantity", *["A,2.00,2"] * 600, 'B,"3.00"x,3', "C,1,1"]
    with pytest.raises(ValidationFailed, match="The row on line 602 is not valid CSV"):
        await service.import_inventory_file(rt, tenant.account_id, write_csv(tmp_path / "stock.csv", rows))
    assert (await stored(rt, tenant.account_id))["A"][:2] == (Decimal("1.00"), 1)
    assert await inventory_events(rt, tenant.account_id) == []


async def test_import_yields_one_event_per_batch_of_500(rt: Runtime, api: httpx.AsyncClient, tmp_path: Path) -> None:
    tenant = await make_tenant(rt, api)
    skus = [f"BULK-{i:05d}" for i in range(1_200)]
    await add_products(rt, tenant.account_id, [(sku, "1", 0) for sku in skus])
    csv_file = write_csv(tmp_path / "bulk.csv", ["Sku,Quantity"] + [f"{sku},{i % 7 + 1}" for i, sku in enumerate(skus)])
    progressed: list[int] = []

    report = await service.import_inventory_file(rt, tenant.account_id, csv_file, on_progress=progressed.append)

    assert report.counts["Updated"] == 1_200 and report.errors == []
    events = payloads(await inventory_events(rt, tenant.account_id))
    assert [e["totalChanged"] for e in events] == [500, 500, 200]
    assert sum(progressed) == 1_200


async def run_cli(rt: Runtime, *args: str) -> tuple[int, str, str]:
    env = {
        **os.environ,
        "MARKETSYNC_DATABASE_URL": rt.settings.database_url,
        "MARKETSYNC_VAR_DIR": str(rt.settings.var_dir),
        "MARKETSYNC_ENCRYPTION_KEYS": TEST_ENCRYPTION_KEYS,
        "MARKETSYNC_SECRET_HASH_KEY": TEST_HASH_KEY,
        "MARKETSYNC_LOG_LEVEL": "WARNING",
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "marketsync",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


async def test_dataflow_set_validates(rt: Runtime, api: httpx.AsyncClient) -> None:
    tenant = await make_tenant(rt, api)
    async with rt.db.transaction() as session:
        with pytest.raises(ValidationFailed) as bad:
            await service.set_data_owner(rt, session, tenant.account_id, "Colour", "Everyone")
        assert set(bad.value.errors) == {"Kind", "Owner"}
        with pytest.raises(NotFound):
            await service.set_data_owner(rt, session, "01J00000000000000000000000", "Price", "Merchant")
        assert await service.data_owner(session, tenant.account_id, "Price") == "Marketplace", "default until set"


async def test_cli_dataflow_set_and_import(rt: Runtime, api: httpx.AsyncClient, tmp_path: Path) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("CLI-1", "1", 1)])

    code, out, err = await run_cli(
        rt,
        "admin",
        "dataflow",
        "set",
        "--account",
        tenant.account_id,
        "--kind",
        "Price",
        "--owner",
        "Merchant",
        "--json",
    )
    assert code == 0, err
    assert json.loads(out) == {"AccountId": tenant.account_id, "Kind": "Price", "Owner": "Merchant"}
    async with rt.db.read() as session:
        assert await service.data_owners(session, tenant.account_id) == {"Price": "Merchant", "Stock": "Marketplace"}

    csv_file = write_csv(tmp_path / "cli.csv", ["Sku,Price,Quantity", "CLI-1,2.50,8", "GHOST,1,1"])
    code, out, err = await run_cli(
        rt, "admin", "import-inventory", "--account", tenant.account_id, str(csv_file), "--json"
    )
    assert code == 0, err
    result = json.loads(out)
    assert (result["Rows"], result["Updated"], result["NotFound"], result["Events"]) == (2, 1, 1, 1)
    assert result["Errors"] == [{"Line": 3, "Sku": "GHOST", "Error": "No product carries this SKU."}]
    assert len(result["Warnings"]) == 1 and "Stock" in result["Warnings"][0]
    assert "importing" in err, "the progress bar goes to stderr"
    assert (await stored(rt, tenant.account_id))["CLI-1"][:2] == (Decimal("2.50"), 8)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"Sku,Price,Quantity\nCLI-1,2.50,8\nCaf\xe9,1,1\n", "Line 3 is not UTF-8 text"),  # Latin-1, as Excel saves
        (b"\xef\xbb\xbfSku,Price,Quantity\nCLI-1,2.50,8\n\nX,1,\xe2\x82", "Line 4 is not UTF-8 text"),  # cut short
        (b"\xff\xfeS\x00k\x00u\x00", "Line 1 is not UTF-8 text"),  # UTF-16
        (b"Sku,Price,Quantity\nCLI-1,2.50,8\nB\x00,1,1\n", "Line 3 holds a NUL character"),
    ],
)
async def test_a_file_that_is_not_utf8_text_is_refused_naming_the_line_with_nothing_applied(
    rt: Runtime, api: httpx.AsyncClient, tmp_path: Path, content: bytes, message: str
) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("CLI-1", "1.00", 1)])
    csv_file = tmp_path / "export.csv"
    csv_file.write_bytes(content)
    with pytest.raises(ValidationFailed) as refused:
        await service.import_inventory_file(rt, tenant.account_id, csv_file)
    assert refused.value.errors == {"File": [f"{message}; save the file as CSV (UTF-8)."]}
    assert (await stored(rt, tenant.account_id))["CLI-1"][:2] == (Decimal("1.00"), 1)


async def test_the_cli_names_the_line_that_is_not_utf8_text_without_a_traceback(
    rt: Runtime, api: httpx.AsyncClient, tmp_path: Path
) -> None:
    """It ended in a traceback (UnicodeDecodeError); now the app's error, the line named, exit status 1."""
    tenant = await make_tenant(rt, api)
    csv_file = tmp_path / "export.csv"
    csv_file.write_bytes(b"Sku,Price,Quantity\nCLI-1,2.50,8\nCaf\xe9,1,1\n")
    code, _out, err = await run_cli(rt, "admin", "import-inventory", "--account", tenant.account_id, str(csv_file))
    assert code == 1 and "Traceback" not in err, err
    assert "File: Line 3 is not UTF-8 text; save the file as CSV (UTF-8)." in err
    code, out, err = await run_cli(
        rt, "admin", "import-inventory", "--account", tenant.account_id, str(csv_file), "--json"
    )
    assert code == 1 and json.loads(out)["errors"] == {
        "File": ["Line 3 is not UTF-8 text; save the file as CSV (UTF-8)."]
    }


async def test_a_row_a_later_row_replaces_is_superseded_and_never_applied(
    rt: Runtime, api: httpx.AsyncClient, tmp_path: Path
) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("A", "1.00", 1), ("B", "2.00", 2), ("dup", "1", 1), ("DUP", "1", 1)])
    csv_file = write_csv(
        tmp_path / "repeats.csv",
        [
            "Sku,Price,Quantity",
            "A,1.10,1",  # line 2: replaced by line 4 (the same product, another casing)
            "B,,3",  # line 3
            "a,,4",  # line 4
            "GHOST,1,1",  # line 5: no product; replaced by line 6 (the same SKU)
            "ghost,1,2",  # line 6
            "dup,,9",  # line 7: two products differing in case: not a repeat
            "DUP,,9",  # line 8
        ],
    )

    report = await service.import_inventory_file(rt, tenant.account_id, csv_file)

    assert (report.rows, report.superseded, report.invalid) == (7, 2, 0)
    assert report.counts == {"Updated": 4, "Unchanged": 0, "NotFound": 1, "Ambiguous": 0, "Failed": 0}
    assert [(e.line, e.sku, e.message.split(",")[0]) for e in report.errors] == [
        (2, "A", "Superseded by line 4"),
        (5, "GHOST", "Superseded by line 6"),
        (6, "ghost", "No product carries this SKU."),
    ]
    view = report.view()
    assert view["Superseded"] == 2 and view["Errors"][0] == {"Line": 2, "Sku": "A", "Error": report.errors[0].message}
    assert service.ImportReport.of_view(view) == report
    assert (await stored(rt, tenant.account_id))["A"][:2] == (Decimal("1.00"), 4)  # line 2's price never applied
    [event] = payloads(await inventory_events(rt, tenant.account_id))
    assert {"sku": "A", "price": None, "quantity": 4} in event["changed"]


async def test_a_row_replaced_from_a_later_batch_is_superseded(
    rt: Runtime, api: httpx.AsyncClient, tmp_path: Path
) -> None:
    """The repeat lands in another batch of 500: the first row is still never applied nor counted Updated."""
    tenant = await make_tenant(rt, api)
    skus = [f"BULK-{i:05d}" for i in range(600)]
    await add_products(rt, tenant.account_id, [(sku, "1", 0) for sku in skus])
    rows = ["Sku,Quantity", f"{skus[0]},5"] + [f"{sku},1" for sku in skus[1:]] + [f"{skus[0].lower()},7"]
    csv_file = write_csv(tmp_path / "late-repeat.csv", rows)

    report = await service.import_inventory_file(rt, tenant.account_id, csv_file)

    assert (report.rows, report.counts["Updated"], report.superseded) == (601, 600, 1)
    assert [(e.line, e.sku) for e in report.errors] == [(2, skus[0])]
    assert report.errors[0].message.startswith("Superseded by line 602")
    events = payloads(await inventory_events(rt, tenant.account_id))
    assert [e["totalChanged"] for e in events] == [499, 101]
    assert [c for e in events for c in e["changed"] if c["sku"] == skus[0]] == [
        {"sku": skus[0], "price": None, "quantity": 7}
    ]
    assert (await stored(rt, tenant.account_id))[skus[0]][1] == 7


async def test_the_cli_text_and_the_app_report_show_superseded_rows(
    rt: Runtime, api: httpx.AsyncClient, tmp_path: Path
) -> None:
    from marketsync.jobs.worker import Worker
    from tests.console.support import make_person, signed_in
    from tests.inventory.support import upload_file

    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("CLI-1", "1", 1)])
    content = "Sku,Price,Quantity\nCLI-1,2.50,8\nCLI-1,,9\n"
    code, out, err = await run_cli(
        rt, "admin", "import-inventory", "--account", tenant.account_id, str(write_csv(tmp_path / "t.csv", [content]))
    )
    assert code == 0, err
    assert "2 rows: Updated 1, Unchanged 0, NotFound 0, Ambiguous 0, Failed 0, Invalid 0, Superseded 1;" in out
    assert "line 2 (CLI-1): Superseded by line 3" in err

    person = await signed_in(api, await make_person(rt, tenant.account_id))
    uploaded = await upload_file(person, content.encode())
    await Worker(rt).drain()
    done = await person.page(uploaded.headers["location"])
    assert "2: 0 updated, 1 unchanged, 0 not found, 0 ambiguous, 0 failed, 0 invalid, 1 superseded" in done.text
    assert (
        '<td data-label="Line">2</td><td data-label="SKU">CLI-1</td><td data-label="Why">Superseded by line 3'
        in done.text
    )
    await person.client.aclose()


async def test_an_invalid_later_row_replaces_nothing(rt: Runtime, api: httpx.AsyncClient, tmp_path: Path) -> None:
    tenant = await make_tenant(rt, api)
    await add_products(rt, tenant.account_id, [("B", "2.00", 2)])
    csv_file = write_csv(tmp_path / "late-invalid.csv", ["Sku,Price,Quantity", "B,,3", "b,abc,5"])

    report = await service.import_inventory_file(rt, tenant.account_id, csv_file)

    assert (report.rows, report.counts["Updated"], report.invalid, report.superseded) == (2, 1, 1, 0)
    assert [(e.line, e.sku) for e in report.errors] == [(3, "b")]
    assert (await stored(rt, tenant.account_id))["B"][:2] == (Decimal("2.00"), 3)
