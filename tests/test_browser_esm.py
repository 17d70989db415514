"""Whether a shared run of browser checks needs Playwright's ES module loader (script.py,
`needs_esm_loader`): without it Playwright's main process and each worker start ~0.4 s of CPU sooner,
so it is left out only where no file of the run could load as an ES module."""

from __future__ import annotations

from pathlib import Path

from runner.checks.protocols.browser.script import Member, needs_esm_loader

PLAIN = "import { test } from '@playwright/test'\ntest('t', async () => {})\n"


def _member(script: str = PLAIN, shared: tuple[tuple[str, str], ...] = ()) -> Member:
    return Member(folder="c1", script=script, output_dir=Path("/x"), own_variables={}, shared_files=shared)


def test_ts_and_js_files_with_import_syntax_do_not_need_it(tmp_path: Path) -> None:
    helper = ("helpers/login.ts", "export const x = 1\n")
    data = ("data/users.json", '{"type": "module"}')
    assert not needs_esm_loader([_member(), _member(shared=(helper, data))], tmp_path)


def test_a_module_file_a_package_json_or_a_dynamic_import_keeps_it(tmp_path: Path) -> None:
    for shared in (("lib/h.mjs", "export {}"), ("lib/h.mts", "export {}"), ("package.json", "{}")):
        assert needs_esm_loader([_member(), _member(shared=(shared,))], tmp_path), shared
    assert needs_esm_loader([_member("const m = await import ('./x')\n" + PLAIN)], tmp_path)
    assert needs_esm_loader([_member(shared=(("win\\dir\\h.mjs", ""),))], tmp_path)


def test_a_module_package_above_the_run_folder_keeps_it(tmp_path: Path) -> None:
    run = tmp_path / "a" / "run"
    run.mkdir(parents=True)
    (tmp_path / "package.json").write_text('{"type": "module"}')
    assert needs_esm_loader([_member()], run)
    (tmp_path / "a" / "package.json").write_text('{"name": "commonjs"}')  # the nearest one decides
    assert not needs_esm_loader([_member()], run)
    (tmp_path / "a" / "package.json").write_text("{ not json")
    assert needs_esm_loader([_member()], run)
