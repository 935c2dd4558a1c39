"""``treebench site``.

Built from a ledger alone, byte-identical across builds, and working in a real browser from file://
(Chromium headless via selenium; skipped, saying why, without one).
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from tests.conftest import REPO, run_cli

#: a slice of the committed ledger that keeps the build quick: TnT Table 1 and Fig. 4, the CI guard
LEDGER = ("tnt_table1", "tnt_fig4", "ci")
SHOTS = REPO / "outputs" / "site-screenshots"  # a CI artifact

pytestmark = pytest.mark.slow  # two site builds and a browser: make test-all (CI) runs them


def _build(tmp: Path, name: str, hash_seed: str) -> Path:
    ledger = tmp / "ledger"
    if not ledger.exists():
        ledger.mkdir()
        for exp in LEDGER:
            shutil.copy(REPO / "results" / f"{exp}.jsonl.gz", ledger)
    out = tmp / name
    env = {"TREEBENCH_LEDGER": str(ledger), "PYTHONHASHSEED": hash_seed}
    r = run_cli(["site", "--out", str(out)], cwd=tmp, env=env)
    assert r.returncode == 0, r.stderr + r.stdout
    return out


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    return _build(tmp_path_factory.mktemp("site"), "a", "1")


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def test_site_rebuilds_byte_identical_with_one_copy_of_each_library(site):
    again = _build(site.parent, "b", "2")  # another hash seed: no set order reaches a page
    a, b = _files(site), _files(again)
    assert sorted(a) == sorted(b)
    assert [f for f in a if a[f] != b[f]] == []
    assert sum(f.endswith("plotly.min.js") for f in a) == 1
    assert sum(f.endswith("datatables.js") for f in a) == 1
    for f, data in a.items():  # every library from assets/, nothing from a network
        if f.endswith(".html"):
            text = data.decode()
            assert (
                "http://" not in text.split("<main>")[0]
                and "https://" not in text.split("<main>")[0]
            )
            assert "cdn" not in text.lower().split("<main>")[0], f


def test_site_pages_show_the_evaluations_verdicts(site):
    verdicts = json.loads((site / "verdicts.json").read_text())
    tnt = (site / "paper" / "tnt.html").read_text()
    for key, status in verdicts["targets"].items():
        paper, target = key.split(":", 1)
        if paper != "tnt":
            continue
        assert f'data-target="{target}" data-verdict="{status}"' in tnt, (target, status)
    index = (site / "index.html").read_text()
    for key, verdict in verdicts["items"].items():
        assert f'data-verdict="{verdict}">{key.split(": ", 1)[1]}<' in index, key


def _driver():
    webdriver = pytest.importorskip("selenium.webdriver", reason="selenium not installed")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    driver = shutil.which("chromedriver")
    if not chromium or not driver:
        pytest.skip("no chromium + chromedriver (apt-get install chromium chromium-driver)")
    o = Options()
    o.binary_location = chromium
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"):
        o.add_argument(a)
    o.add_argument("--window-size=1400,1000")
    o.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    return webdriver.Chrome(service=Service(driver), options=o)


def _wait(d, script: str, timeout: float = 20.0):
    end = time.time() + timeout
    while time.time() < end:
        v = d.execute_script(script)
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for: {script}")


def test_site_in_a_real_browser(site):
    d = _driver()
    try:
        pages = sorted(str(p.relative_to(site)) for p in site.rglob("*.html"))
        requests = set()
        for page in pages:
            d.get((site / page).as_uri())
            d.execute_script("return document.readyState")
            if page == "ledger.html":
                _wait(d, "return document.getElementById('ledger').dataset.ready")
            errors = [e for e in d.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
            assert errors == [], (page, errors)
            for e in d.get_log("performance"):
                m = json.loads(e["message"])["message"]
                if m["method"] == "Network.requestWillBeSent":
                    requests.add(m["params"]["request"]["url"].split(":", 1)[0])
        assert requests <= {"file", "blob", "data"}, requests
        # the ledger explorer: an exact method name leaves only its rows
        d.get((site / "ledger.html").as_uri())
        _wait(d, "return document.getElementById('ledger').dataset.ready")
        box = d.find_element("id", "filter-method")
        box.send_keys("cart")
        methods = _wait(
            d,
            "var r = Array.from(document.querySelectorAll('#ledger tbody tr'))"
            ".map(t => t.children[1].textContent); return r.every(m => m === 'cart') && r",
        )
        assert methods and set(methods) == {"cart"}
        # a figure draws its points (TnT Fig. 4: means, every run, the paper's numbers)
        d.get((site / "paper" / "tnt.html").as_uri())
        drawn = _wait(d, "return document.querySelectorAll('.figure .scatterlayer .point').length")
        declared = sum(
            int(v)
            for v in d.execute_script(
                "return Array.from(document.querySelectorAll('.figure')).map(f => f.dataset.points)"
            )
        )
        assert 100 < drawn <= declared
        SHOTS.mkdir(parents=True, exist_ok=True)
        d.execute_script("document.getElementById('table-1').scrollIntoView()")
        d.save_screenshot(str(SHOTS / "paper_tnt.png"))
        d.get((site / "index.html").as_uri())
        d.save_screenshot(str(SHOTS / "index.png"))
    finally:
        d.quit()
    assert (SHOTS / "index.png").stat().st_size > 10_000
    if os.environ.get("CI"):
        print(f"screenshots: {SHOTS}")
