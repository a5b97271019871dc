"""The ``explain --html`` page in a real browser (Debian's chromium, headless, driven by
selenium): it loads with no console error, shows the legend and every call's span, lights
a call's span on hover, and a 1 MB reply's page loads.  Skips, saying why, where no
browser or driver is installed."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

import tooldialect as td
from tooldialect.explain import REGION_KINDS
from tooldialect.explain_view import html_page

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed (pip install '.[dev]')")

CHROMIUM = next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if Path(p).exists()), None)
DRIVER = shutil.which("chromedriver") or next((p for p in ("/usr/bin/chromedriver",) if Path(p).exists()), None)
if CHROMIUM is None or DRIVER is None:
    pytest.skip(
        "no headless browser here: install Debian's chromium and chromium-driver to run the page tests",
        allow_module_level=True,
    )

REPLY = (
    "<think>Two cities.</think>Checking.\n"
    '<tool_call>{"name": "get_weather", "arguments": {"city": "Paris",}}</tool_call>\n'
    '<tool_call>{"name": "get_weather", "arguments": {"city": "Zürich"}}</tool_call>\n'
    '<tool_call>{"name": "get_time", "arguments": {"tz": "Europe/Par'
)


@pytest.fixture(scope="module")
def browser():
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1200,900"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    except Exception as exc:  # noqa: BLE001 - a driver that does not match the browser, no display libraries …
        pytest.skip(f"chromium did not start: {exc}".splitlines()[0])
    driver.set_page_load_timeout(60)
    yield driver
    driver.quit()


def _load(browser, tmp_path: Path, ex: td.Explanation) -> float:
    page = tmp_path / "explain.html"
    page.write_text(html_page(ex), encoding="utf-8")
    browser.get_log("browser")  # what earlier pages logged
    began = time.perf_counter()
    browser.get(page.as_uri())
    browser.execute_script("return document.readyState")
    return time.perf_counter() - began


def _errors(browser) -> list[dict]:
    return [entry for entry in browser.get_log("browser") if entry.get("level") == "SEVERE"]


def test_the_page_loads_without_errors_and_a_hover_lights_the_span(browser, tmp_path):
    from selenium.webdriver.common.action_chains import ActionChains
    from selenium.webdriver.common.by import By

    ex = td.explain(REPLY, chunk=16)
    _load(browser, tmp_path, ex)
    assert _errors(browser) == []
    legend = [li.text for li in browser.find_elements(By.CSS_SELECTOR, "#legend li")]
    assert legend == list(REGION_KINDS)
    for k, call in enumerate(ex.result.calls):
        spans = browser.find_elements(By.CSS_SELECTOR, f'#reply [data-c="{k}"]')
        assert "".join(s.get_attribute("textContent") for s in spans) == REPLY[call.span[0] : call.span[1]]
    # hovering a call in the list lights its span in the reply, and only its span
    item = browser.find_element(By.CSS_SELECTOR, '#calls li[data-c="1"]')
    ActionChains(browser).move_to_element(item).perform()
    lit = browser.find_elements(By.CSS_SELECTOR, "#reply .hl")
    assert lit and all(s.get_attribute("data-c") == "1" for s in lit)
    # a diagnostic lights the text it covers
    truncated = next(i for i, d in enumerate(ex.result.diagnostics) if d.kind == "truncated")
    ActionChains(browser).move_to_element(
        browser.find_element(By.CSS_SELECTOR, f'#diagnostics li[data-d="{truncated}"]')
    ).perform()
    lit = browser.find_elements(By.CSS_SELECTOR, "#reply .hl")
    span = ex.result.diagnostics[truncated].span
    assert "".join(s.get_attribute("textContent") for s in lit) == REPLY[span[0] : span[1]]
    rows = browser.find_elements(By.CSS_SELECTOR, "#timeline tr")
    assert len(rows) == 1 + len(ex.stream)
    assert _errors(browser) == []


def test_a_one_megabyte_reply_renders(browser, tmp_path):
    from selenium.webdriver.common.by import By

    # a long answer: about 10 KB of prose (code spans, HTML tags) between each round of calls
    prose = "Some prose about the weather, with `code`, <b>tags</b> and numbers 12.5.\n" * 130
    unit = prose + REPLY.replace("Europe/Par", 'UTC"}}</tool_call>\n')
    text = unit * (1_000_000 // len(unit) + 1)
    ex = td.explain(text, chunk=4096)
    seconds = _load(browser, tmp_path, ex)
    print(f"1 MB reply ({len(text)} characters, {len(ex.result.calls)} calls): page loaded in {seconds:.2f} s")
    assert seconds < 30
    assert _errors(browser) == []
    last = len(ex.result.calls) - 1
    assert browser.find_elements(By.CSS_SELECTOR, f'#reply [data-c="{last}"]')
