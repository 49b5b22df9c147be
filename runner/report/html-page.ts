/**
 * The style and script of report.html (report/html.ts), embedded in the
 * page as text: plain browser JavaScript without a library, run from
 * `file://` without a network. The script reads the data element
 * (`#sg-data`), draws the test table virtually (only the rows in view
 * exist in the DOM, so 100,000 tests scroll and filter at once), applies
 * the status filters and the search, shows a test's detail, and the
 * tooltip of a timeline bar on hover or focus. Tested in a real browser
 * (test/report-html*.test.ts). Neither text may contain a closing script
 * or style tag.
 */

/** The page's style sheet. */
export const PAGE_CSS = String.raw`
:root { --passed:#2f9e44; --failed:#e03131; --timed-out:#f08c00; --crashed:#9c36b5; --never-started:#868e96; --skipped:#adb5bd; --todo:#74c0fc; --skipped-by-diff:#a5d8ff; --flaky:#e8590c; --fg:#212529; --muted:#6c757d; --line:#dee2e6; }
* { box-sizing: border-box; }
body { font: 14px/1.4 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg); margin: 0 auto; padding: 16px 24px; max-width: 1400px; }
h1 { font-size: 20px; margin: 0 0 12px; } h2 { font-size: 16px; margin: 20px 0 8px; }
code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; font-size: 12px; }
#counts { display: flex; gap: 8px; flex-wrap: wrap; }
.count { border: 1px solid var(--line); border-radius: 6px; padding: 6px 12px; min-width: 96px; border-top: 4px solid var(--muted); }
.count b { display: block; font-size: 20px; } .count span { color: var(--muted); font-size: 12px; }
.c-passed { border-top-color: var(--passed); } .c-failed { border-top-color: var(--failed); } .c-timed-out { border-top-color: var(--timed-out); }
.c-crashed { border-top-color: var(--crashed); } .c-never-started { border-top-color: var(--never-started); } .c-flaky { border-top-color: var(--flaky); }
#facts { color: var(--muted); } #exit-code.ok { color: var(--passed); font-weight: 600; } #exit-code.bad { color: var(--failed); font-weight: 600; }
.legend .key { margin-right: 12px; font-size: 12px; color: var(--muted); white-space: nowrap; }
.legend i { display: inline-block; width: 12px; height: 12px; vertical-align: -2px; margin-right: 4px; border-radius: 2px; }
.legend .st-passed i { background: var(--passed); } .legend .st-failed i { background: var(--failed); } .legend .st-timed-out i { background: var(--timed-out); } .legend .st-crashed i { background: var(--crashed); }
.k-term { border-left: 3px solid #1c7ed6; } .k-grace { background: repeating-linear-gradient(90deg, #fff8 0 2px, transparent 2px 4px), #f08c00; } .k-kill { border-left: 3px solid #000; }
.k-idle { background: repeating-linear-gradient(45deg, #f1f3f5 0 3px, #ced4da 3px 4px); } .k-chain { border: 2px solid #1c7ed6; }
#timeline-box { position: relative; border: 1px solid var(--line); border-radius: 6px; padding: 4px; overflow-x: auto; }
#timeline text { font-size: 11px; fill: var(--muted); } #timeline .chain-label { fill: #1c7ed6; font-weight: 600; }
#timeline .idle-bg { fill: #f8f9fa; } #timeline .idle-line { stroke: #ced4da; stroke-width: 2; }
#timeline .bar { cursor: pointer; outline: none; } #timeline .bar rect:first-child { stroke: #fff; stroke-width: 0.5; }
#timeline .bar.chain rect:first-child { stroke: #1c7ed6; stroke-width: 2; }
#timeline .bar:focus rect:first-child, #timeline .bar:hover rect:first-child { stroke: #000; stroke-width: 2; }
#timeline .st-passed rect { fill: var(--passed); } #timeline .st-failed rect { fill: var(--failed); } #timeline .st-timed-out rect { fill: var(--timed-out); }
#timeline .st-crashed rect { fill: var(--crashed); } #timeline .st-never-started rect { fill: var(--never-started); } #timeline .st-skipped-by-diff rect { fill: var(--skipped-by-diff); }
#timeline rect.grace { fill: #fff; fill-opacity: 0.45; stroke: none; }
#timeline line.term { stroke: #1c7ed6; stroke-width: 2.5; } #timeline line.kill { stroke: #000; stroke-width: 2.5; }
#timeline .axis line { stroke: var(--muted); }
#tip { position: fixed; z-index: 2; background: #fff; border: 1px solid #adb5bd; border-radius: 6px; padding: 8px 10px; box-shadow: 0 2px 8px #0003; max-width: 520px; font-size: 12px; pointer-events: none; }
#tip h3 { margin: 0 0 4px; font-size: 13px; } #tip ul { margin: 2px 0; padding-left: 16px; } #tip p { margin: 2px 0; }
#controls { display: flex; gap: 8px; flex-wrap: wrap; align-items: center; margin-bottom: 8px; }
.filter { border: 1px solid var(--line); background: #fff; border-radius: 14px; padding: 2px 10px; cursor: pointer; font: inherit; font-size: 12px; }
.filter[aria-pressed="true"] { background: #212529; color: #fff; border-color: #212529; } .filter .n { opacity: 0.7; } .filter.empty { display: none; }
#search { font: inherit; padding: 3px 8px; min-width: 260px; border: 1px solid #adb5bd; border-radius: 4px; }
#count { color: var(--muted); margin-left: auto; } #shard-filter button { font: inherit; font-size: 12px; }
#table { border: 1px solid var(--line); border-radius: 6px; }
.row { display: grid; grid-template-columns: minmax(120px, 2fr) minmax(80px, 2fr) minmax(120px, 3fr) 110px 90px 60px; gap: 8px; padding: 0 8px; height: 26px; align-items: center; border-bottom: 1px solid #f1f3f5; white-space: nowrap; }
.row > span { overflow: hidden; text-overflow: ellipsis; } .row .num { text-align: right; }
.row.head { font-weight: 600; background: #f8f9fa; border-bottom: 1px solid var(--line); }
#rows { position: relative; height: 60vh; min-height: 260px; overflow-y: auto; }
#rows .row { position: absolute; left: 0; right: 0; cursor: pointer; } #rows .row:hover, #rows .row:focus { background: #e7f5ff; outline: none; } #rows .row.open { background: #d0ebff; }
.badge { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 11px; color: #fff; background: var(--muted); }
.badge.st-passed { background: var(--passed); } .badge.st-failed { background: var(--failed); } .badge.st-timed-out { background: var(--timed-out); } .badge.st-crashed { background: var(--crashed); }
.badge.st-never-started { background: var(--never-started); } .badge.st-skipped, .badge.st-todo { background: var(--skipped); } .badge.st-skipped-by-diff { background: var(--skipped-by-diff); color: #000; } .badge.flaky { background: var(--flaky); }
#detail { margin-top: 12px; border: 1px solid var(--line); border-radius: 6px; padding: 12px; }
#detail h3 { margin: 0 0 6px; font-size: 15px; } #detail pre { background: #f8f9fa; padding: 8px; overflow: auto; max-height: 40vh; white-space: pre-wrap; word-break: break-word; }
#detail .close { float: right; }
`;

/** The page's script. */
export const PAGE_SCRIPT = String.raw`
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("sg-data").textContent);
  var STATUSES = data.run.statuses;
  var tests = data.tests, files = data.files, shards = data.shards;
  var ROW = 26;
  var rowsBox = document.getElementById("rows"), spacer = document.getElementById("spacer");
  var countEl = document.getElementById("count"), search = document.getElementById("search");
  var detail = document.getElementById("detail"), shardFilterEl = document.getElementById("shard-filter");
  var selected = {}, query = "", shardFilter = -1, visible = [], openRow = -1, haystack = null;

  function el(tag, cls, text) { var e = document.createElement(tag); if (cls) e.className = cls; if (text !== undefined) e.textContent = text; return e; }
  function secs(ms) { return ms >= 10000 ? Math.round(ms / 1000) + " s" : (ms / 1000).toFixed(ms >= 1000 ? 1 : 2) + " s"; }
  function dur(ms) { return ms >= 1000 ? (ms / 1000).toFixed(2) + " s" : ms.toFixed(ms < 10 ? 1 : 0) + " ms"; }
  function bytes(n) { return n >= 1048576 ? (n / 1048576).toFixed(1) + " MiB" : (n / 1024).toFixed(0) + " KiB"; }
  function parts(name) { var p = name.split(" > "); return { describe: p.slice(0, -1).join(" > "), test: p[p.length - 1] }; }

  // Filter counts: per status over all tests, flaky apart.
  var counts = {}; STATUSES.forEach(function (s) { counts[s] = 0; }); counts.flaky = 0;
  for (var i = 0; i < tests.length; i++) { counts[STATUSES[tests[i][3]]]++; if (tests[i][6]) counts.flaky++; }
  var buttons = document.querySelectorAll("#filters .filter");
  buttons.forEach(function (b) {
    var s = b.getAttribute("data-status");
    b.querySelector(".n").textContent = s === "all" ? tests.length : counts[s];
    if (s !== "all" && !counts[s]) b.classList.add("empty");
    b.addEventListener("click", function () {
      if (s === "all") selected = {};
      else if (selected[s]) delete selected[s];
      else selected[s] = true;
      buttons.forEach(function (o) {
        var os = o.getAttribute("data-status");
        o.setAttribute("aria-pressed", String(os === "all" ? Object.keys(selected).length === 0 : !!selected[os]));
      });
      apply();
    });
  });

  function matches(i) {
    var t = tests[i];
    if (shardFilter >= 0 && t[0] !== shardFilter) return false;
    var any = false, ok = false;
    for (var k in selected) { any = true; if (k === "flaky" ? t[6] === 1 : STATUSES[t[3]] === k) { ok = true; break; } }
    if (any && !ok) return false;
    if (query) {
      if (!haystack) { haystack = new Array(tests.length); for (var j = 0; j < tests.length; j++) haystack[j] = (files[tests[j][1]] + "\u0000" + tests[j][2]).toLowerCase(); }
      if (haystack[i].indexOf(query) < 0) return false;
    }
    return true;
  }

  function apply() {
    visible = [];
    for (var i = 0; i < tests.length; i++) if (matches(i)) visible.push(i);
    spacer.style.height = visible.length * ROW + "px";
    countEl.textContent = "showing " + visible.length.toLocaleString("en-US") + " of " + tests.length.toLocaleString("en-US") + " tests";
    rowsBox.scrollTop = 0;
    draw(true);
  }

  var drawn = {};
  function draw(reset) {
    if (reset) { spacer.textContent = ""; drawn = {}; }
    var top = rowsBox.scrollTop, height = rowsBox.clientHeight || 600;
    var from = Math.max(0, Math.floor(top / ROW) - 10), to = Math.min(visible.length, Math.ceil((top + height) / ROW) + 10);
    for (var key in drawn) { var n = +key; if (n < from || n >= to) { drawn[key].remove(); delete drawn[key]; } }
    for (var p = from; p < to; p++) if (!drawn[p]) { var r = rowEl(visible[p]); r.style.top = p * ROW + "px"; spacer.appendChild(r); drawn[p] = r; }
  }

  function rowEl(i) {
    var t = tests[i], st = STATUSES[t[3]], np = parts(t[2]);
    var r = el("div", "row" + (i === openRow ? " open" : ""));
    r.setAttribute("role", "row"); r.tabIndex = 0; r.setAttribute("data-test", String(i));
    r.appendChild(el("span", "file", files[t[1]])).title = files[t[1]];
    r.appendChild(el("span", "describe", np.describe)).title = np.describe;
    r.appendChild(el("span", "name", np.test)).title = np.test;
    var sc = el("span", "status"); sc.appendChild(el("span", "badge st-" + st, st));
    if (t[6]) { sc.appendChild(document.createTextNode(" ")); sc.appendChild(el("span", "badge flaky", "flaky")); }
    r.appendChild(sc);
    r.appendChild(el("span", "num", dur(t[4])));
    r.appendChild(el("span", "num", String(t[5])));
    return r;
  }

  rowsBox.addEventListener("scroll", function () { requestAnimationFrame(function () { draw(false); }); });
  function openFrom(target) { var r = target.closest && target.closest(".row[data-test]"); if (r) showDetail(+r.getAttribute("data-test")); }
  rowsBox.addEventListener("click", function (e) { openFrom(e.target); });
  rowsBox.addEventListener("keydown", function (e) { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); openFrom(e.target); } });

  var timer = 0;
  search.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(function () { query = search.value.trim().toLowerCase(); apply(); }, 120); });

  function section(title, text) { var d = el("div"); d.appendChild(el("h4", "", title)); d.appendChild(el("pre", "", text)); return d; }

  function showDetail(i) {
    var t = tests[i], s = shards[t[0]], st = STATUSES[t[3]];
    openRow = i;
    for (var key in drawn) drawn[key].classList.toggle("open", +drawn[key].getAttribute("data-test") === i);
    detail.textContent = "";
    var close = el("button", "close", "close"); close.type = "button";
    close.addEventListener("click", function () { detail.hidden = true; openRow = -1; draw(true); });
    detail.appendChild(close);
    detail.appendChild(el("h3", "", t[2]));
    var meta = el("p");
    meta.appendChild(el("span", "badge st-" + st, st));
    meta.appendChild(document.createTextNode(" " + files[t[1]] + (t[11] ? ":" + t[11] : "") + " · " + dur(t[4]) + " · " + t[5] + " retr" + (t[5] === 1 ? "y" : "ies") + (t[6] ? " · flaky" : "")));
    detail.appendChild(meta);
    if (t[7]) detail.appendChild(section("Failure (" + t[7] + ")", t[8] + (t[9] ? "\n\n" + t[9] : "")));
    if (t[10]) detail.appendChild(section("Failed attempts", t[10]));
    var sp = el("p", "", "Shard " + s.index + " (" + s.status + "): " + s.reason);
    detail.appendChild(sp);
    if (s.tail) detail.appendChild(section("Log tail of shard " + s.index + (s.logPath ? " (" + s.logPath + ")" : ""), s.tail));
    else detail.appendChild(el("p", "muted", s.logPath ? "Full log: " + s.logPath : "No log was written for this shard."));
    detail.hidden = false;
  }

  function setShardFilter(n) {
    shardFilter = n;
    shardFilterEl.textContent = "";
    if (n >= 0) {
      shardFilterEl.appendChild(document.createTextNode("shard " + shards[n].index + " only "));
      var b = el("button", "", "×"); b.type = "button"; b.setAttribute("aria-label", "show every shard");
      b.addEventListener("click", function () { setShardFilter(-1); });
      shardFilterEl.appendChild(b);
    }
    shardFilterEl.hidden = n < 0;
    apply();
  }

  // Timeline tooltips: on hover and on keyboard focus.
  var tip = document.getElementById("tip");
  function showTip(bar) {
    var s = shards[+bar.getAttribute("data-shard")];
    tip.textContent = "";
    tip.appendChild(el("h3", "", "Shard " + s.index + ": " + s.status));
    var ul = el("ul"); s.files.slice(0, 20).forEach(function (f) { ul.appendChild(el("li", "", f)); });
    if (s.files.length > 20) ul.appendChild(el("li", "", "… " + (s.files.length - 20) + " more"));
    tip.appendChild(ul);
    tip.appendChild(el("p", "", s.reason));
    var tl = s.timeline, fig = ["ran " + secs(s.durationMs)];
    if (tl) { fig.push("group gone at " + secs(tl.goneMs)); if (tl.sigtermMs !== null) fig.push("SIGTERM at " + secs(tl.sigtermMs)); if (tl.sigkillMs !== null) fig.push("SIGKILL at " + secs(tl.sigkillMs)); }
    fig.push(s.signal ? "signal " + s.signal : "exit " + s.exitCode);
    tip.appendChild(el("p", "", fig.join(" · ")));
    var r = s.resources;
    if (r) {
      var rf = ["wall " + secs(r.wallMs)];
      if (r.cpuUserMs !== null) rf.push("CPU user " + secs(r.cpuUserMs));
      if (r.cpuSystemMs !== null) rf.push("system " + secs(r.cpuSystemMs));
      if (r.peakRssBytes !== null) rf.push("peak RSS " + bytes(r.peakRssBytes));
      rf.push("measured by " + r.method + " (" + r.precision + ")");
      tip.appendChild(el("p", "resources", rf.join(" · ")));
    }
    var held = s.exclusive ? ["ran alone (exclusive)"] : [];
    if (s.locks.length) held.push("held " + s.locks.join(", "));
    if (s.waited) held.push("waited " + secs(s.waited.ms) + " for " + s.waited.for.join(", "));
    if (held.length) tip.appendChild(el("p", "locks", held.join(" · ")));
    if (s.leftovers) tip.appendChild(el("p", "", s.leftovers + " leftover process" + (s.leftovers === 1 ? "" : "es") + " killed by the sweep"));
    s.notes.forEach(function (n) { tip.appendChild(el("p", "", n)); });
    var bb = bar.getBoundingClientRect();
    tip.hidden = false;
    tip.style.left = Math.max(4, Math.min(bb.left, window.innerWidth - tip.offsetWidth - 8)) + "px";
    var below = bb.bottom + 6, above = bb.top - tip.offsetHeight - 6;
    tip.style.top = (below + tip.offsetHeight > window.innerHeight && above > 0 ? above : below) + "px";
  }
  function hideTip() { tip.hidden = true; }
  document.querySelectorAll("#timeline .bar").forEach(function (bar) {
    bar.addEventListener("mouseenter", function () { showTip(bar); });
    bar.addEventListener("mouseleave", hideTip);
    bar.addEventListener("focus", function () { showTip(bar); });
    bar.addEventListener("blur", hideTip);
    bar.addEventListener("click", function () { setShardFilter(+bar.getAttribute("data-shard")); });
    bar.addEventListener("keydown", function (e) { if (e.key === "Enter") setShardFilter(+bar.getAttribute("data-shard")); });
  });

  apply();
  document.body.setAttribute("data-ready", "1");
})();
`;
