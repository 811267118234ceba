"""The HTML report in a real browser: Debian's chromium and chromium-driver (apt), driven by selenium (extra
``browser-test``). Opened from ``file://`` with no server: no console message (no script error, no load the
page's Content-Security-Policy refused), every chart drawn, the tables sorted by a click, the links working."""

from __future__ import annotations

import math
import shutil

import pytest

selenium = pytest.importorskip("selenium", reason="selenium not installed (optional extra 'browser-test')")

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402

import deteval  # noqa: E402
from deteval.analysis.html_report import MATCH_KEYS, PER_IMAGE_KEYS, write_report  # noqa: E402
from deteval.cli import sample_pair  # noqa: E402

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser")) if p), None)
DRIVER = shutil.which("chromedriver")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None or DRIVER is None, reason="no chromium and chromedriver (apt-get install chromium chromium-driver)"
)


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(options=options, service=Service(DRIVER))  # the driver given: nothing downloaded
    yield driver
    driver.quit()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    from deteval.analysis.calibration import calibration
    from deteval.analysis.tide import tide_errors

    dt, gt = sample_pair()
    res = deteval.evaluate(dt, gt)
    per_image = [dict(zip(PER_IMAGE_KEYS, (i, 3, 4, i % 4, 4 - i % 4, 3 - min(3, i % 4)))) for i in range(40)]
    matches = [
        dict(zip(MATCH_KEYS, (thr, k, i, 1, 0.9 - k / 10, k if k % 2 else None, 0.7 if k % 2 else None, False)))
        for thr in (0.5, 0.75)
        for i in range(40)
        for k in range(4)
    ]
    path = write_report(res, tmp_path_factory.mktemp("report"), tide=tide_errors(str(dt), str(gt)),
                        calibration=calibration(res), per_image=per_image, matches=matches)  # fmt: skip
    return res, path


def _open(driver, path):
    driver.get(path.as_uri())
    driver.get_log("browser")  # what an earlier page left
    driver.refresh()
    return driver


def test_opens_without_console_messages_and_draws_every_chart(browser, report):
    res, path = report
    d = _open(browser, path)
    assert d.execute_script("return document.readyState") == "complete"
    assert d.get_log("browser") == []  # no error, no refused load, no warning
    charts = d.find_elements(By.CSS_SELECTOR, "svg.chart")
    assert len(charts) == 4  # PR curves, F1 vs score, TIDE, reliability
    for svg in charts:
        assert svg.size["width"] > 300 and svg.size["height"] > 150
        box = d.execute_script("var b = arguments[0].getBBox(); return [b.width, b.height];", svg)
        assert box[0] > 300 and box[1] > 150
        assert d.execute_script("return arguments[0].querySelectorAll('polyline, rect').length;", svg) > 5
    # no raster image and none broken
    assert (
        d.execute_script("return Array.from(document.images).filter(i => !i.complete || !i.naturalWidth).length") == 0
    )


def _column(d, table, col):
    return d.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0] + ' tbody tr')).map("
        "r => r.cells[arguments[1]].getAttribute('data-v'));",
        table,
        col,
    )


def test_per_class_table_sorts_on_a_click(browser, report):
    res, path = report
    d = _open(browser, path)
    heads = [th.text for th in d.find_elements(By.CSS_SELECTOR, "#per-class thead th")]
    ap, name, cid = heads.index("AP"), heads.index("name"), heads.index("category_id")
    rows = res.per_class

    def missing(v):
        return v is None or v == -1 or (isinstance(v, float) and math.isnan(v))

    # first click: high to low, no value last, ties in category order; the second: low to high, no value last
    by_ap = sorted(range(len(rows)), key=lambda i: (missing(rows[i]["AP"]), -(rows[i]["AP"] or 0), i))
    up = sorted(range(len(rows)), key=lambda i: (missing(rows[i]["AP"]), rows[i]["AP"] or 0, i))
    button = d.find_elements(By.CSS_SELECTOR, "#per-class thead th button")[ap]
    button.click()
    assert _column(d, "#per-class", cid) == [str(rows[i]["category_id"]) for i in by_ap]
    assert d.find_elements(By.CSS_SELECTOR, "#per-class thead th")[ap].get_attribute("aria-sort") == "descending"
    button.click()
    assert _column(d, "#per-class", cid) == [str(rows[i]["category_id"]) for i in up]
    d.find_elements(By.CSS_SELECTOR, "#per-class thead th button")[name].click()
    assert _column(d, "#per-class", name) == sorted(r["name"] for r in rows)
    assert d.get_log("browser") == []


def test_empty_categories_shown_on_request_and_links_open_an_image(browser, report):
    res, path = report
    d = _open(browser, path)
    empty = d.find_elements(By.CSS_SELECTOR, "#per-class tr.empty")
    assert len(empty) == 4 and not any(r.is_displayed() for r in empty)
    d.find_element(By.CSS_SELECTOR, "input[data-toggle=per-class]").click()
    assert all(r.is_displayed() for r in empty)
    details = d.find_element(By.ID, "image-0")
    assert details.get_attribute("open") is None
    d.find_element(By.CSS_SELECTOR, "#worst-images a[href='#image-0']").click()
    assert details.get_attribute("open") == "true"
    assert len(details.find_elements(By.CSS_SELECTOR, "tbody tr")) == 4  # image 0's four rows at IoU .50
    assert d.get_log("browser") == []
