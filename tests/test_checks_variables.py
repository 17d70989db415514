"""`{{NAME}}` variables in real checks: where they apply, which source wins, and secrets never shown."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from checks_servers import HttpServer
from helpers import child_env, run_here

from runner.checks import Attempt, Limits, Variable, VariableSources, run_check, variables_from
from runner.checks.variables import Substitution
from runner.models import EnvironmentVariable
from runner.models.check_definitions import parse_check_definition

SECRET = "s3cr3t-Value/with spaces"
CHECK_ID = "0b9a3c4d-1111-4a5b-8c6d-00000000aaaa"


def run(request: dict[str, Any], sources: VariableSources | None = None, **fields: Any) -> Attempt:
    definition = {"id": CHECK_ID, "name": "Vars", "checkType": "API", "request": request, **fields}
    return run_check(parse_check_definition(definition), max_run_seconds=30, variables=sources).final


def echo(attempt: Attempt) -> dict[str, Any]:
    assert attempt.body_excerpt is not None, attempt.message
    return dict(json.loads(attempt.body_excerpt))


def test_variables_fill_url_headers_query_body_and_basic_auth(web: HttpServer) -> None:
    sources = VariableSources(
        session=(Variable("BASE", web.url("")), Variable("USER", "ada"), Variable("WORD", "a b")),
    )
    request = {
        "method": "POST",
        "url": "{{BASE}}/echo?from={{USER}}",
        "headers": [{"key": "X-User", "value": "{{USER}}"}, {"key": "X-Raw", "value": "{{{WORD}}}"}],
        "queryParameters": [{"key": "who", "value": "{{USER}}"}],
        "body": '{"name": "{{WORD}}", "check": "{{CHECK_NAME}}", "id": "{{CHECK_ID}}"}',
        "bodyType": "JSON",
        "basicAuth": {"username": "{{USER}}", "password": "pw"},
    }
    got = echo(run(request, sources))
    assert got["query"] == {"from": ["ada"], "who": ["ada"]}
    assert got["headers"]["x-user"] == "ada" and got["headers"]["x-raw"] == "a b"  # {{{ }}}: as it is
    # {{ }} is URI-encoded like encodeURI (production: "double brackets variables will be URI encoded").
    assert json.loads(got["body"]) == {"name": "a%20b", "check": "Vars", "id": CHECK_ID}
    assert base64.b64decode(got["headers"]["authorization"].split()[1]) == b"ada:pw"


def test_the_session_wins_over_the_account_and_the_account_over_the_check(web: HttpServer) -> None:
    sources = VariableSources(
        session=(Variable("A", "session"),),
        account=(Variable("A", "account"), Variable("B", "account")),
        check=(Variable("A", "check"), Variable("B", "check"), Variable("C", "check")),
    )
    got = echo(run({"url": web.url("/echo?a={{A}}&b={{B}}&c={{C}}")}, sources))
    assert got["query"] == {"a": ["session"], "b": ["account"], "c": ["check"]}
    # The check's own environmentVariables (production's field) count as the check's source.
    own = [{"key": "C", "value": "own"}]
    definition = run({"url": web.url("/echo?c={{C}}")}, VariableSources(), environmentVariables=own)
    assert echo(definition)["query"] == {"c": ["own"]}


def test_an_unknown_variable_fails_the_check_naming_it_and_sends_nothing(web: HttpServer) -> None:
    attempt = run(
        {"url": web.url("/echo"), "headers": [{"key": "Authorization", "value": "Bearer {{API_TOKEN}}"}]}
    )
    assert not attempt.passed and attempt.error_class == "CONFIGURATION_ERROR"
    assert attempt.error_kind == "unknown_variable" and attempt.status_code is None
    assert attempt.message == (
        "unknown variable API_TOKEN in request.headers[Authorization]: set it in the session's, "
        "the account's or the check's environment variables"
    )


def test_helpers(web: HttpServer) -> None:
    got = echo(run({"url": web.url("/echo?u={{$UUID}}&n={{$RANDOM_NUMBER}}")}))
    assert len(got["query"]["u"][0]) == 36 and 0 <= int(got["query"]["n"][0]) <= 10000
    moment = run({"url": web.url('/echo?d={{moment "YYYY-MM-DD"}}')})
    assert moment.error_kind == "unsupported_helper" and "{{moment" in (moment.message or "")


def assert_no_secret(attempt: Attempt, secret: str = SECRET) -> None:
    shown = repr(attempt)
    for spelling in (secret, json.dumps(secret)[1:-1], secret.replace(" ", "%20"), secret.replace(" ", "+")):
        assert spelling not in shown


def test_a_secret_never_appears_in_the_attempt(web: HttpServer) -> None:
    """The server echoes the secret back everywhere; the attempt masks every spelling of it."""
    sources = VariableSources(session=(Variable("TOKEN", SECRET, secret=True), Variable("USER", "ada")))
    request = {
        "method": "POST",
        "url": web.url("/echo?token={{TOKEN}}"),
        "headers": [{"key": "X-Token", "value": "{{{TOKEN}}}"}],
        "body": "token={{{TOKEN}}}",
        "basicAuth": {"username": "{{USER}}", "password": "{{{TOKEN}}}"},
        "assertions": [{"source": "TEXT_BODY", "comparison": "EQUALS", "target": "something else"}],
    }
    attempt = run(request, sources)
    assert not attempt.passed and attempt.failed_assertion is not None  # the message quotes the body
    assert "***" in (attempt.body_excerpt or "") and "***" in (attempt.message or "")
    assert_no_secret(attempt)
    basic = base64.b64encode(f"ada:{SECRET}".encode()).decode()
    assert basic not in repr(attempt)


def test_a_secret_in_a_failing_host_name_is_masked(web: HttpServer) -> None:
    sources = VariableSources(session=(Variable("HOST", "internal-secret-host", secret=True),))
    attempt = run({"url": "http://{{HOST}}.invalid/"}, sources)
    assert attempt.message == "DNS lookup failed: ***.invalid"
    assert_no_secret(attempt, "internal-secret-host")


def test_a_secret_is_masked_in_any_case_and_in_its_host_spellings(web: HttpServer) -> None:
    """A host name comes back lower-cased (`DNS lookup failed: sess-t0ken_4242.invalid`): trial25's
    finding 6. Any case of a secret is masked, and a secret that is not ASCII in its IDNA spelling."""
    sources = VariableSources(session=(Variable("HOST", "Sess-T0ken_4242", secret=True),))
    attempt = run({"url": "http://{{HOST}}.invalid/x"}, sources)
    assert attempt.error_kind == "dns_lookup" and attempt.message == "DNS lookup failed: ***.invalid"
    assert "t0ken" not in repr(attempt).lower()
    assert attempt.fingerprint == "DNS lookup failed: ***.invalid"  # the group's key: masked too
    # The server echoes the secret upper-cased: masked as well.
    upper = VariableSources(session=(Variable("TOKEN", "MixedCase-Secret", secret=True),))
    echoed = run({"url": web.url("/echo?t=mixedcase-SECRET"), "assertions": [
        {"source": "TEXT_BODY", "comparison": "EQUALS", "target": "x"}]}, upper)  # fmt: skip
    assert "***" in (echoed.message or "") and "secret" not in (echoed.body_excerpt or "").lower()
    subst = Substitution(VariableSources(session=(Variable("H", "Geheim-Schlüssel", secret=True),)))
    assert subst.redact("lookup failed: xn--geheim-schlssel-9vb.invalid") == "lookup failed: ***.invalid"
    assert subst.redact("geheim-schlüssel.invalid") == "***.invalid"


def test_a_secret_without_a_value_or_too_short_does_not_run(web: HttpServer) -> None:
    exported = VariableSources(check=(Variable("TOKEN", None, secret=True),))
    attempt = run({"url": web.url("/echo?t={{TOKEN}}")}, exported)
    assert attempt.error_kind == "variable_without_value" and "TOKEN" in (attempt.message or "")
    short = VariableSources(session=(Variable("PIN", "42", secret=True),))
    attempt = run({"url": web.url("/echo?t={{PIN}}")}, short)
    assert attempt.error_kind == "secret_too_short" and attempt.status_code is None
    assert "42" not in (attempt.message or "")


def test_variables_from_the_trigger_body_models() -> None:
    session = [EnvironmentVariable(key="TOKEN", value=SECRET, secret=True), {"key": "PLAIN", "value": "x"}]
    assert variables_from(session) == [Variable("TOKEN", SECRET, True), Variable("PLAIN", "x", False)]


def test_a_secret_cut_in_half_by_a_cap_is_still_masked(web: HttpServer) -> None:
    sources = VariableSources(session=(Variable("TOKEN", SECRET, secret=True),))
    definition = {"name": "Cut", "checkType": "API", "request": {"method": "POST", "url": web.url("/echo"),
                  "body": "a" * 10 + "{{{TOKEN}}}"}}  # fmt: skip
    attempt = run_check(parse_check_definition(definition), max_run_seconds=30, variables=sources,
                        limits=Limits(excerpt_chars=14)).final  # fmt: skip
    assert attempt.request is not None and attempt.request.body_excerpt == "aaaaaaaaaa***"
    assert SECRET[:4] not in repr(attempt)
    cut = Substitution(sources).cut
    assert cut("x" * 195 + SECRET, 200) == "x" * 195 + "***" and cut("short", 200) == "short"


def test_checks_of_a_run_share_its_secrets_but_not_each_others(web: HttpServer) -> None:
    """The run's variables are read once for all its checks (VariableSources.substitution); what one
    check adds (its own secret, the Basic credentials of a secret) is masked in its attempt only."""
    sources = VariableSources(session=(Variable("TOKEN", SECRET, secret=True),))
    own = [{"key": "MINE", "value": "own-secret-value", "secret": True}]
    first = run({"url": web.url("/echo?t={{TOKEN}}&m={{MINE}}")}, sources, environmentVariables=own)
    assert_no_secret(first)
    assert_no_secret(first, "own-secret-value")
    auth = {"username": "ada", "password": "{{{TOKEN}}}"}
    second = run({"url": web.url("/echo?x=own-secret-value"), "basicAuth": auth}, sources)
    assert second.request is not None and "own-secret-value" in second.request.target  # not its secret
    assert_no_secret(second)
    basic = base64.b64encode(f"ada:{SECRET}".encode()).decode()
    encoded = SECRET.replace(" ", "%20")
    third = run({"url": web.url(f"/echo?token={encoded}&b={basic}")}, sources)
    assert third.request is not None and encoded not in third.request.target  # the run's: masked
    assert basic in third.request.target  # the second check's Basic credentials: its own


def test_encoding_many_large_values_keeps_none_of_them() -> None:
    """encode_uri is cached for the few values that fill every check (a base URL), and that cache is
    bounded in size, not only in count: 256 large values (a setup script's token, a body, a session's
    variables in a long-lived emulator) were all kept, ~25 MiB here and without limit."""
    import tracemalloc

    from runner.checks.variables import encode_uri

    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for number in range(300):
            assert encode_uri(f"{number}-" + "v" * 50_000).startswith(f"{number}-v")
        kept = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert kept < 2_000_000, kept
    assert encode_uri("https://example.com/a b") == "https://example.com/a%20b"


def test_a_bug_on_a_check_masks_its_own_secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An error of the engine (a bug: exit 4) is shown with its message and traceback, masked with
    the secrets the check knows: its own environmentVariables too, not only the run's. Before, a
    message that held the check's URL showed its own secret on the console and in every report."""
    import runner.checks.run

    def broken(seen: Any, *_args: object) -> object:
        raise RuntimeError(f"bug while judging {seen.request.target}")

    monkeypatch.setattr(runner.checks.run, "judge", broken)
    (tmp_path / "ok.yml").write_text(
        "checks:\n  - name: ok\n    checkType: API\n"
        '    environmentVariables: [{key: MINE, value: "own-secret-value-42", secret: true}]\n'
        '    request: {method: GET, url: "http://127.0.0.1:1/?k={{MINE}}"}\n',
        encoding="utf-8",
    )
    reports = ["--json", "o/r.json", "--junit", "o/j.xml", "--markdown", "o/s.md"]
    ran = run_here(["run", "--checks", "ok.yml", "--no-rca", *reports], child_env(), tmp_path)
    assert ran.returncode == 4, ran.stderr
    shown = ran.stdout + ran.stderr + "".join(p.read_text() for p in (tmp_path / "o").iterdir())
    assert "bug while judging http://127.0.0.1:1/?k=***" in shown
    assert "own-secret-value-42" not in shown
