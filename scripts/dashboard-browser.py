#!/usr/bin/python3
"""The dashboard in a real headless Chromium against a real coordinator (run by
Tests/IntegrationTests/DashboardBrowserTests.swift; needs Debian's chromium, chromium-driver and
python3-selenium, which scripts/setup installs).

The Swift test starts opcoord (--http) and workers, submits a small diamond run and a large run whose
queue `held` is suspended, and runs this script, which checks what the page shows against what
`opctl` says, then resumes `held` and checks the page follows to the end. Every wait is bounded.
Screenshots go to --out. Exit 0 when every check passed; the failures are printed otherwise.

Usage: scripts/dashboard-browser.py --url http://127.0.0.1:PORT/ --opctl PATH --endpoint tcp://… \
           --big RUN --big-total N --held QUEUE --held-count N --small RUN --out DIR
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

COUNT_FIELDS = ["pending", "ready", "dispatched", "executing", "finished", "failed", "cancelled"]
failures = []


def log(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def check(ok, what):
    log(("ok: " if ok else "FAILED: ") + what)
    if not ok:
        failures.append(what)
    return ok


def poll(what, timeout, probe, interval=0.25):
    """Calls probe() until it returns something truthy or `timeout` seconds pass; returns the last value."""
    deadline = time.monotonic() + timeout
    value = None
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(interval)
    log(f"timed out after {timeout} s waiting for {what}")
    return value


class Opctl:
    def __init__(self, path, endpoint):
        self.path = path
        self.env = dict(os.environ, OPCOORD=endpoint)

    def run(self, *args):
        r = subprocess.run([self.path, *args], env=self.env, capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            raise RuntimeError(f"opctl {' '.join(args)}: exit {r.returncode}: {r.stderr}")
        return r.stdout

    def queues(self):
        """{name: {field: int, suspended, max_concurrent}} from `opctl status --json --queues-only`."""
        data = json.loads(self.run("status", "--json", "--queues-only"))
        return {q["name"]: {**{f: int(q[f]) for f in COUNT_FIELDS},
                            "suspended": bool(q["suspended"]), "max_concurrent": int(q["max_concurrent"])}
                for q in data["queues"]}

    def runs(self):
        return {r["run"]: r for r in json.loads(self.run("runs", "--json"))["runs"]}


class Page:
    def __init__(self, driver):
        self.d = driver

    def js(self, script, *args):
        return self.d.execute_script(script, *args)

    def queues(self):
        """The queue rows as the page shows them (their data- attributes)."""
        return {row["name"]: row for row in self.js("""
            return [...document.querySelectorAll('#queues-body tr[data-queue]')].map(tr => {
              const r = {name: tr.dataset.queue, suspended: tr.dataset.suspended === '1',
                         max_concurrent: Number(tr.dataset.maxConcurrent), qos: tr.dataset.qos};
              for (const f of arguments[0]) r[f] = Number(tr.dataset['count' + f[0].toUpperCase() + f.slice(1)]);
              return r;
            });""", COUNT_FIELDS)}

    def total(self, name):
        return int(self.js("return document.getElementById(arguments[0]).dataset.value", f"total-{name}"))

    def run_row(self, run):
        return self.js("""
            const tr = document.querySelector(`#runs-body tr[data-run="${arguments[0]}"]`);
            return tr ? {...tr.dataset} : null;""", run)

    def seq(self):
        return int(self.js("return Number(document.body.dataset.summarySeq || 0)"))

    def choose(self, select_id, value):
        """Sets a <select> (whose option may only appear with the next summary) and fires its change."""
        return poll(f"option {value} in #{select_id}", 15, lambda: self.js("""
            const s = document.getElementById(arguments[0]);
            if (![...s.options].some(o => o.value === arguments[1])) return false;
            s.value = arguments[1]; s.dispatchEvent(new Event('change')); return true;""", select_id, value))

    def tab(self, name):
        self.d.find_element(By.ID, f"tab-{name}").click()

    def screenshot(self, path):
        # The whole page, not just the window: grow the window to the document's height first.
        height = self.js("return Math.min(4000, document.documentElement.scrollHeight)")
        self.d.set_window_size(1500, max(1000, height))
        self.d.save_screenshot(path)
        self.d.set_window_size(1500, 1000)
        log(f"screenshot {path}")


def same_counts(page, coordinator):
    """Differences between the page's queue rows and opctl's, as text ("" when they agree)."""
    diffs = []
    for name in sorted(set(page) | set(coordinator)):
        p, c = page.get(name), coordinator.get(name)
        if p is None or c is None:
            diffs.append(f"{name}: {'missing on the page' if p is None else 'not in opctl'}")
            continue
        for f in COUNT_FIELDS + ["suspended", "max_concurrent"]:
            if p[f] != c[f]:
                diffs.append(f"{name}.{f}: page {p[f]} opctl {c[f]}")
    return "; ".join(diffs)


def compare_until_equal(page, opctl, what, attempts=20):
    """Polls both sides until they agree (the page follows within about one refresh); bounded."""
    diff = ""
    for _ in range(attempts):
        coordinator = opctl.queues()
        seq = page.seq()
        # Give the page the next summary after opctl's reading: the page is at most one refresh behind.
        poll("the next summary", 5, lambda: page.seq() > seq, interval=0.05)
        diff = same_counts(page.queues(), coordinator)
        if not diff:
            return check(True, f"{what}: page counts equal opctl status --json")
        time.sleep(0.2)
    return check(False, f"{what}: page and opctl differ after {attempts} tries: {diff}")


def start_browser(profile):
    options = webdriver.ChromeOptions()
    options.binary_location = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    for a in ["--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
              "--window-size=1500,1000", f"--user-data-dir={profile}"]:
        options.add_argument(a)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")), options=options)
    driver.set_page_load_timeout(30)
    driver.set_script_timeout(15)
    return driver


def wait_for_http(url, timeout=20):
    def answers():
        try:
            with urllib.request.urlopen(url + "api/summary", timeout=2) as r:
                return r.status == 200
        except Exception:
            return False
    return poll(f"{url} to answer", timeout, answers)


def main():
    ap = argparse.ArgumentParser()
    for name in ["url", "opctl", "endpoint", "big", "held", "small", "out"]:
        ap.add_argument(f"--{name}", required=True)
    ap.add_argument("--big-total", type=int, required=True)
    ap.add_argument("--held-count", type=int, required=True)
    ap.add_argument("--chain", required=True)
    ap.add_argument("--chain-total", type=int, required=True)
    ap.add_argument("--shared-queue", help="a queue two submitters used: its share row lists both (issue 28)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    opctl = Opctl(a.opctl, a.endpoint)
    if not check(wait_for_http(a.url), f"{a.url} answers /api/summary"):
        return 1

    profile = tempfile.mkdtemp(prefix="opq-chromium-")   # a fresh profile, removed at the end
    driver = start_browser(profile)
    page = Page(driver)
    try:
        run_checks(page, opctl, a)
    except Exception as e:  # a selenium or opctl error is a failure with a screenshot, not a crash
        check(False, f"exception: {type(e).__name__}: {e}")
    finally:
        if failures:
            try:
                driver.save_screenshot(os.path.join(a.out, "dashboard-failure.png"))
                for entry in driver.get_log("browser")[-30:]:
                    log(f"browser: {entry.get('level')} {entry.get('message')}")
            except Exception as e:
                log(f"(no failure screenshot: {e})")
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
    print(f"dashboard: {len(failures)} check(s) failed" if failures else "dashboard: every check passed", flush=True)
    return 1 if failures else 0


def run_checks(page, opctl, a):
    page.d.get(a.url)
    check(poll("the live indicator", 20, lambda: page.js("return document.getElementById('conn').dataset.state") == "live"),
          "the page is connected to /api/live (indicator says live)")
    check(poll("a first summary", 10, lambda: page.seq() >= 1), "a summary arrived")
    # Stale worker reports (after a restart: hundreds) are said in plain words, in the muted line, not as an alarm.
    late = page.js("renderSummary(Object.assign({}, summary, {status: Object.assign({}, summary.status, {fenced: '685'})}));"
                   "const e = document.getElementById('coordinator-stats');"
                   "const r = [e.textContent, e.className, e.title]; renderSummary(summary); return r")
    check(late[0].endswith(", 685 late worker reports ignored") and "fenced" not in late[0] and late[1] == "muted" and late[2],
          f"685 stale reports read '685 late worker reports ignored' in the muted header line: {late}")
    # An --ha leader with a hot standby says so in the header (issue 29); this lone coordinator shows no badge.
    role = page.js("const e = document.getElementById('role'); const alone = [e.hidden, e.textContent];"
                   "renderSummary(Object.assign({}, summary, {status: Object.assign({}, summary.status, {epoch: '7', replication: 'sync',"
                   " standbys: [{name: 'head-b', state: 'sync', lag_records: '3', lag_us: '1500'}]})}));"
                   "const r = [e.hidden, e.textContent, e.dataset.epoch]; renderSummary(summary); return alone.concat(r, [e.hidden])")
    check(role[0] is True and role[2] is False
          and role[3] == "leader, epoch 7 · standby head-b: sync (sync), lag 3 records, 1.5 ms" and role[4] == "7" and role[5] is True,
          f"the role badge: hidden alone, 'leader, epoch 7 · standby head-b: …' with a standby: {role}")
    first = page.seq()
    check(poll("more live summaries", 10, lambda: page.seq() >= first + 2), "live summaries keep coming (about one a second)")

    # While the big run progresses, the page is never ahead of the coordinator: a count it shows was
    # true at some time before opctl's next reading.
    for _ in range(3):
        shown = page.total("finished")
        said = sum(q["finished"] for q in opctl.queues().values())
        check(shown <= said, f"during the run: page finished {shown} ≤ opctl's later {said}")
        time.sleep(0.5)

    # The run settles with `held` suspended: everything else finished, held's ops ready.
    default_total = a.big_total - a.held_count
    settled = poll("the big run to settle", 120, lambda: (
        lambda q: q.get(a.held, {}).get("ready") == a.held_count and
        sum(v["finished"] for v in q.values()) >= default_total)(opctl.queues()), interval=0.5)
    check(bool(settled), f"run {a.big} settled: {default_total} finished, {a.held_count} ready in suspended {a.held}")
    compare_until_equal(page, opctl, "settled")
    held = page.queues().get(a.held, {})
    check(held.get("suspended") is True and held.get("max_concurrent") == 2 and held.get("qos") == "utility",
          f"queue {a.held} shows suspended, limit 2, QoS utility: {held}")
    totals = {f: page.total(f) for f in COUNT_FIELDS + ["operations", "succeeded"]}
    queues = page.queues()
    check(all(totals[f] == sum(q[f] for q in queues.values()) for f in COUNT_FIELDS),
          f"header totals are the sums of the queue rows: {totals}")
    row = page.run_row(a.big) or {}
    runs = opctl.runs()
    big = runs.get(a.big, {})
    check(row.get("total") == str(a.big_total) and row.get("countSucceeded") == str(big.get("succeeded"))
          and row.get("finished") == "0", f"run row {a.big}: {row} vs opctl runs {big}")
    check(page.js("return document.querySelectorAll('#workers-body tr[data-worker]').length") == 2, "two workers listed")
    if a.shared_queue:
        shares = page.js(
            "const r = document.querySelector(`#queues-body tr[data-shares-of=\"${arguments[0]}\"]`);"
            "return r ? [...r.querySelectorAll('[data-share]')].map(t => [t.dataset.share, t.dataset.shareRunning, t.dataset.shareReady]) : null",
            a.shared_queue)
        check(bool(shares) and len(shares) >= 2 and all(s[1] is not None and s[2] is not None for s in shares),
              f"queue {a.shared_queue} shows a share row with each submitter's running and ready ops: {shares}")
    page.screenshot(os.path.join(a.out, "dashboard.png"))

    # Operations table with filters: run + state ready = the held ops.
    page.tab("ops")
    page.choose("filter-run", a.big)
    page.js("document.querySelector('#filter-states input[value=ready]').click()")
    check(poll("the filtered table", 15, lambda: page.js(
        "const m = document.getElementById('ops-matched'); return Number(m.dataset.matched) === arguments[0] && "
        "document.querySelectorAll('#ops-body tr[data-op]').length === arguments[0]", a.held_count)),
        f"ops table filtered to run {a.big}, state ready: {a.held_count} rows")
    page.js("document.querySelector('#filter-states input[value=ready]').click()")

    # DAG: the big run collapsed into layers, the small one drawn node by node with its critical path.
    page.tab("dag")
    page.choose("dag-run", a.big)
    check(poll("the big run's DAG", 30, lambda: page.js(
        "const s = document.getElementById('dag-svg'); return s.dataset.ops === String(arguments[0]) && "
        "s.dataset.collapsed === '1' && s.querySelectorAll('[data-dag-item]').length > 0", a.big_total)),
        f"DAG of {a.big}: {a.big_total} ops collapsed into layer boxes")
    layers = page.js("return document.querySelectorAll('#dag-svg .dag-group').length")
    check(layers >= 10, f"DAG of {a.big} has its layers ({layers} boxes)")
    page.screenshot(os.path.join(a.out, "dashboard-dag-large.png"))
    page.choose("dag-run", a.chain)
    check(poll("the chain's DAG", 30, lambda: page.js(
        "const s = document.getElementById('dag-svg'); return s.dataset.ops === String(arguments[0]) && "
        "s.dataset.collapsed === '1'", a.chain_total)),
        f"DAG of {a.chain}: {a.chain_total} ops collapsed")
    bands = page.js("return [...document.querySelectorAll('#dag-svg .dag-group')].map(g => [Number(g.dataset.layer), Number(g.dataset.lastLayer), Number(g.dataset.count)])")
    check(0 < len(bands) <= 40, f"a {a.chain_total}-op chain is drawn in at most 40 boxes ({len(bands)})")
    check(sum(b[2] for b in bands) == a.chain_total and bands[0][0] == 0 and bands[-1][1] == a.chain_total - 1,
          f"the boxes cover every layer of the chain once: {bands[:2]} … {bands[-1:]}")
    page.choose("dag-run", a.small)
    check(poll("the small run's DAG", 20, lambda: page.js(
        "return document.querySelectorAll('#dag-svg .dag-node.st-succeeded').length === 4")),
        f"DAG of {a.small}: 4 nodes, all succeeded")
    critical = page.js("return [...document.querySelectorAll('#dag-svg .dag-node[data-critical]')].map(n => n.dataset.op)")
    check(critical == [f"{a.small}/a", f"{a.small}/b", f"{a.small}/d"],
          f"critical path by duration is a → b → d (b sleeps longest): {critical}")
    check(page.js("return document.querySelectorAll('#dag-svg path.edge').length") == 4, "DAG of the diamond has 4 edges")
    check(page.d.current_url.endswith(f"#/run/{a.small}/dag"), f"the DAG shown has its own address: {page.d.current_url}")
    page.screenshot(os.path.join(a.out, "dashboard-dag.png"))

    # Timeline: spans packed into slot lanes per worker.
    page.tab("timeline")
    page.choose("timeline-run", a.big)
    check(poll("timeline spans", 30, lambda: page.js(
        "return document.querySelectorAll('#timeline-svg rect.span').length > 0 && "
        "Number(document.getElementById('timeline-svg').dataset.spans) > 0")),
        "timeline draws spans")
    lanes = page.js("return [...document.querySelectorAll('#timeline-svg .tl-worker')].map(g => [g.dataset.worker, Number(g.dataset.lanes)])")
    check(len(lanes) == 2, f"timeline has a row per worker: {lanes}")
    log(f"timeline lanes per worker (slots 4 each): {lanes}")
    check(page.d.current_url.endswith(f"#/run/{a.big}/timeline"), f"the timeline shown has its own address: {page.d.current_url}")
    page.screenshot(os.path.join(a.out, "dashboard-timeline.png"))

    # Op page: clicking a span opens it, with its spec, outcome and story.
    page.js("document.querySelector('#timeline-svg rect.span').dispatchEvent(new MouseEvent('click', {bubbles: true}))")
    check(poll("the op panel", 15, lambda: page.js(
        "const b = document.getElementById('op-body'); return !document.getElementById('op-panel').hidden && "
        "!!b.dataset.loaded && !!document.getElementById('op-spec')")), "clicking a span opens the op page")
    check("#op=" in page.d.current_url, f"the op page has its own address: {page.d.current_url}")
    page.screenshot(os.path.join(a.out, "dashboard-op.png"))
    page.d.get(a.url + f"#op={a.big}/h0")
    check(poll("a held op's page", 15, lambda: page.js(
        "return document.getElementById('op-body').dataset.loaded === arguments[0] && "
        "!!document.querySelector('#op-why li')", f"{a.big}/h0")),
        "a held op's page says why it is not running")
    why = page.js("return document.getElementById('op-why').innerText")
    check("suspend" in why, f"why mentions the suspension: {why!r}")
    page.d.find_element(By.ID, "op-close").click()

    # Resume: the page follows the rest of the run live, without a reload.
    check(poll("the live indicator after navigation", 20,
               lambda: page.js("return document.getElementById('conn').dataset.state") == "live"), "live again")
    opctl.run("resume", a.held)
    check(poll("the page to show every op finished", 60, lambda: page.total("finished") == page.total("operations")),
          "after resume the page shows every operation finished")
    compare_until_equal(page, opctl, "finished")
    row = page.run_row(a.big) or {}
    check(row.get("finished") == "1" and row.get("countSucceeded") == str(a.big_total), f"run row {a.big} finished: {row}")

    # Addresses: opened fresh, each shows its view (the run's option only comes with the first summary).
    page.d.get("about:blank")
    page.d.get(a.url + f"#/run/{a.small}/dag")
    check(poll("the small run's DAG from its address", 20, lambda: page.js(
        "return document.body.dataset.tab === 'dag' && document.getElementById('dag-run').value === arguments[0] && "
        "document.querySelectorAll('#dag-svg .dag-node.st-succeeded').length === 4", a.small)),
        f"#/run/{a.small}/dag opens the DAG of {a.small}")
    page.d.get(a.url + f"#/run/{a.big}")
    check(poll("the big run's ops from its address", 20, lambda: page.js(
        "return document.body.dataset.tab === 'ops' && document.getElementById('filter-run').value === arguments[0]", a.big)),
        f"#/run/{a.big} opens the operations of {a.big}")
    page.d.get(a.url + "#/timeline")
    check(poll("the timeline from its address", 20, lambda: page.js(
        "return document.body.dataset.tab === 'timeline' && !document.querySelector('[data-tab-panel=timeline]').hidden")),
        "#/timeline opens the timeline")
    page.js("document.querySelector('#runs-body [data-run-link=\"' + arguments[0] + '\"]').click()", a.big)
    check(poll("a run link", 20, lambda: page.js(
        "return document.body.dataset.tab === 'dag' && document.getElementById('dag-run').value === arguments[0]", a.big)
        and page.d.current_url.endswith(f"#/run/{a.big}/dag")),
        f"a run's name in the runs table opens #/run/{a.big}/dag")


if __name__ == "__main__":
    sys.exit(main())
