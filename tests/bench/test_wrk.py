"""Reading wrk's --latency report, and the command line that asks for it (no wrk is run)."""

from __future__ import annotations

import pytest

from app.bench import wrk

# The layout of `wrk --latency` (wrk's README shows the same sections): thread stats, the
# latency distribution, the totals, then the error lines only when there were errors.
REPORT = """\
Running 5s test @ http://127.0.0.1:8000/
  1 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     5.12ms    1.03ms  20.11ms   90.00%
    Req/Sec     9.80k   500.00    10.50k    80.00%
  Latency Distribution
     50%  812.00us
     75%    5.40ms
     90%    6.10ms
     99%    1.20s
  48765 requests in 5.00s, 10.23MB read
  Socket errors: connect 1, read 2, write 3, timeout 4
  Non-2xx or 3xx responses: 7
Requests/sec:   9753.12
Transfer/sec:      2.05MB
"""


def test_a_full_report_is_read_with_its_units() -> None:
    result = wrk.parse(REPORT)
    assert result.requests_per_s == pytest.approx(9753.12)
    assert result.p50_ms == pytest.approx(0.812)  # 812 us
    assert result.p99_ms == pytest.approx(1200.0)  # 1.20 s
    assert result.requests == 48765
    assert result.bad_responses == 7
    assert result.socket_errors == 1 + 2 + 3 + 4


def test_a_clean_run_has_no_error_lines_and_counts_none() -> None:
    clean = "\n".join(line for line in REPORT.splitlines() if "errors" not in line and "Non-2xx" not in line)
    result = wrk.parse(clean)
    assert (result.bad_responses, result.socket_errors) == (0, 0)
    assert result.p99_ms == pytest.approx(1200.0)


def test_a_report_without_its_percentiles_is_refused() -> None:
    without = "\n".join(line for line in REPORT.splitlines() if "99%" not in line)
    with pytest.raises(RuntimeError, match="unreadable wrk output"):
        wrk.parse(without)


@pytest.mark.parametrize("text", ["5.1min", "ms", "12"])
def test_a_latency_in_an_unknown_unit_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="unreadable wrk latency"):
        wrk.parse(REPORT.replace("812.00us", text))


def test_the_command_rounds_the_duration_and_sends_every_header(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wrk, "wrk_path", lambda: "/usr/bin/wrk")
    args = wrk.command(
        "http://h/p", connections=50, seconds=0.4, threads=2, headers={"Accept": "text/html", "Cookie": "s=1"}
    )
    assert args == [
        "/usr/bin/wrk", "-t2", "-c50", "-d1s", "--latency",
        "-H", "Accept: text/html", "-H", "Cookie: s=1", "http://h/p",
    ]  # fmt: skip
    assert "-d3s" in wrk.command("http://h/", connections=1, seconds=2.6, threads=1, headers={})


def test_a_missing_wrk_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(wrk.shutil, "which", lambda name: None)
    with pytest.raises(RuntimeError, match="apt-get install wrk"):
        wrk.wrk_path()
