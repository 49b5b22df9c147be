// @ts-check
/**
 * The script of report.html (report/html.ts writes the page, report/html-page.ts inlines this
 * file): a classic browser script without a library, run from `file://` without a network. It
 * reads the page's data (`#sg-data`), draws the test table virtually (only the rows in view
 * exist in the DOM, so 100,000 tests scroll and filter at once), applies the status filters
 * and the search, shows a test's detail, and the tooltip of a timeline bar on hover or focus.
 * Type-checked by runner/report/tsconfig.page.json; tested in Chromium (test/report-html*.test.ts).
 * It may not contain a closing script tag.
 */

/**
 * One test, as html.ts's `data` writes it: [shard, file, name, status, durationMs, retries,
 * flaky, failureType, failureMessage, failureDetails, attempts, line, quarantined, usd]. shard, file and status
 * are positions in `shards`, `files` and `run.statuses`; 0 stands for an absent text or line; usd is the dollars
 * the test spent, null when it recorded no cost. Read by the names of
 * COL, never by bare positions, so a field added at the end (html.ts) changes nothing here.
 * @typedef {[number, number, string, number, number, number, 0 | 1, string | 0, string | 0, string | 0,
 *   string | 0, number, 0 | 1, number | null]} TestRow
 */

/**
 * A shard's CPU and memory figures (report.json's `shards[].resources`).
 * @typedef {object} Resources
 * @property {number} wallMs
 * @property {number | null} cpuUserMs
 * @property {number | null} cpuSystemMs
 * @property {number | null} peakRssBytes
 * @property {string} method
 * @property {string} precision
 */

/**
 * One shard of the page's data: the fields this script reads.
 * @typedef {object} Shard
 * @property {number} index
 * @property {string[]} files
 * @property {string} status
 * @property {string} reason
 * @property {number | null} exitCode
 * @property {string | null} signal
 * @property {number} durationMs
 * @property {{ goneMs: number, sigtermMs: number | null, sigkillMs: number | null } | null} timeline
 * @property {Resources | null} resources
 * @property {string[]} locks
 * @property {boolean} exclusive
 * @property {{ ms: number, for: string[] } | null} waited
 * @property {string[]} notes
 * @property {number} leftovers
 * @property {string | null} cost what it spent, as text ("$1.25"); null when it recorded no cost
 * @property {string | null} logPath
 * @property {string | null} tail
 */

/**
 * The page's data: the JSON of `#sg-data`.
 * @typedef {object} PageData
 * @property {{ statuses: string[] }} run
 * @property {Shard[]} shards
 * @property {TestRow[]} tests
 * @property {string[]} files
 * @property {PageHistory} [history] present only when the run had a history
 */

/**
 * The run history's strips (html.ts's historyData): the runs' ids, oldest first and this run last, and a strip per
 * test in the order of `tests`: [cells, flipRate, runs], cells a character per run (a status's position in
 * `run.statuses`, base 36, or "." for none).
 * @typedef {object} PageHistory
 * @property {string[]} runs
 * @property {[string, number, number][]} strips
 */

(() => {
  /** A TestRow's fields by name: their positions in html.ts's row. */
  const COL = /** @type {const} */ ({
    shard: 0,
    file: 1,
    name: 2,
    status: 3,
    durationMs: 4,
    retries: 5,
    flaky: 6,
    failureType: 7,
    failureMessage: 8,
    failureDetails: 9,
    attempts: 10,
    line: 11,
    quarantined: 12,
    usd: 13,
  });
  /** Statuses of tests that never ran: no duration is shown for them ("—"), since none was measured. */
  const NEVER_RAN = new Set(["never-started", "skipped-by-diff", "skipped", "todo"]);
  /** The URL fragment that opens a test's detail: `#test=` and its file and name, URI-encoded. */
  const LINK_PREFIX = "#test=";
  /** Statuses a file's heading does not count as "not passed". */
  const PASSING = new Set(["passed", "skipped", "todo", "skipped-by-diff"]);
  /** The height of a table row in px, as the style sheet's `.row`. */
  const ROW_HEIGHT = 26;
  /** Rows drawn beyond each edge of the view, so a short scroll shows no gap. */
  const OVERSCAN = 10;
  /** Statuses from the best to the worst: the status column's ascending order; one not named sorts last. */
  const STATUS_ORDER = [
    "passed",
    "skipped",
    "todo",
    "skipped-by-diff",
    "never-started",
    "failed",
    "timed-out",
    "crashed",
  ];
  /** How many of a shard's files its tooltip lists. */
  const TIP_FILES = 20;

  /** @type {PageData} */
  const data = JSON.parse(element("#sg-data").textContent ?? "");
  const { tests, files, shards } = data;
  const statuses = data.run.statuses;
  const rowsBox = element("#rows");
  const spacer = element("#spacer");
  const countEl = element("#count");
  const search = /** @type {HTMLInputElement} */ (element("#search"));
  const detail = element("#detail");
  const shardFilterEl = element("#shard-filter");
  const tip = element("#tip");
  const filterButtons = document.querySelectorAll("#filters .filter");
  const groupBox = /** @type {HTMLInputElement} */ (element("#group"));
  const sortButtons = document.querySelectorAll("#table .row.head .sort");
  /** Whether the table has a cost column: html.ts writes one when any test recorded a cost. */
  const withCost = element("#table").classList.contains("with-cost");
  const counts = statusCounts();
  // The status column widens only when there are strips to hold (the style sheet's #table.has-history).
  if (data.history) element("#table").classList.add("has-history");

  /** The status filters chosen ("flaky" among them); none chosen shows every status. @type {Set<string>} */
  const selected = new Set();
  /** The search text in lower case; empty shows every test. */
  let query = "";
  /** The shard whose tests alone are shown (a position in `shards`), or -1 for every shard. */
  let shardFilter = -1;
  /** The column the table is sorted by (a header's `data-sort`), or "" for the run's order. */
  let sortKey = "";
  /** 1 ascending, -1 descending. */
  let sortDir = 1;
  /** Every test (positions in `tests`) in the sort's order, built once per sort; null in the run's order. */
  /** @type {number[] | null} */
  let order = null;
  /** Whether the table groups its tests by file, each file under a heading row. */
  let grouped = false;
  /**
   * The table's rows: the tests the filters let through, as positions in `tests`, in order; grouped by file, each
   * file's heading before its tests as `-1 - position in files`.
   * @type {number[]}
   */
  let visible = [];
  /** Per file (a position in `files`), when grouped: its tests shown and how many of them did not pass. */
  /** @type {Map<number, { shown: number, notPassed: number }>} */
  const tallies = new Map();
  /** The test whose detail is open (a position in `tests`), or -1. */
  let openRow = -1;
  /** Each test's file, name and failure text in lower case, built at the first search. @type {string[] | null} */
  let haystack = null;
  /** The row elements drawn, by their position in `visible`. @type {Map<number, HTMLElement>} */
  const drawn = new Map();
  let searchTimer = 0;

  for (const button of filterButtons) wireFilter(button);
  for (const button of sortButtons)
    button.addEventListener("click", () => sortBy(button.getAttribute("data-sort") ?? ""));
  rowsBox.addEventListener("scroll", () => {
    requestAnimationFrame(() => draw(false));
  });
  rowsBox.addEventListener("click", (e) => openFrom(e.target));
  groupBox.addEventListener("change", () => {
    grouped = groupBox.checked;
    apply();
  });
  rowsBox.addEventListener("keydown", (e) => {
    if (e.key === "Enter" || e.key === " ") {
      e.preventDefault();
      openFrom(e.target);
    }
  });
  search.addEventListener("input", () => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => {
      query = search.value.trim().toLowerCase();
      apply();
    }, 120);
  });
  for (const bar of /** @type {NodeListOf<SVGElement>} */ (document.querySelectorAll("#timeline .bar"))) wireBar(bar);
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape") closeDetail();
  });
  window.addEventListener("hashchange", openFromLink);
  apply();
  openFromLink();
  document.body.setAttribute("data-ready", "1");

  /**
   * The element `selector` finds under `root`; html.ts always writes it.
   * @param {string} selector
   * @param {ParentNode} [root]
   * @returns {HTMLElement}
   */
  function element(selector, root = document) {
    const found = root.querySelector(selector);
    if (!(found instanceof HTMLElement)) throw new Error(`report.html has no ${selector}`);
    return found;
  }

  /**
   * Item `i` of `list`; the page's data only refers to items it holds.
   * @template T
   * @param {readonly T[]} list
   * @param {number} i
   * @returns {T}
   */
  function at(list, i) {
    const item = list[i];
    if (item === undefined) throw new RangeError(`report.html's data has no item ${i}`);
    return item;
  }

  /**
   * A new element with a class and a text, each when given.
   * @template {keyof HTMLElementTagNameMap} K
   * @param {K} tag
   * @param {string} [cls]
   * @param {string} [text]
   * @returns {HTMLElementTagNameMap[K]}
   */
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  /** @param {number} ms */
  function secs(ms) {
    return ms >= 10000 ? `${Math.round(ms / 1000)} s` : `${(ms / 1000).toFixed(ms >= 1000 ? 1 : 2)} s`;
  }

  /** @param {number} ms */
  function dur(ms) {
    return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(ms < 10 ? 1 : 0)} ms`;
  }

  /**
   * A test's duration, or "—" for a test that never ran (its 0 was never measured).
   * @param {TestRow} t
   */
  function ranFor(t) {
    return NEVER_RAN.has(statusOf(t)) ? "—" : dur(t[COL.durationMs]);
  }

  /**
   * A test's cost as text, as results/cost-apply.ts's usdText writes dollars: cents, or finer when cents round it;
   * "—" when it recorded none.
   * @param {TestRow} t
   */
  function costOf(t) {
    const usd = t[COL.usd];
    if (usd === null || usd === undefined) return "—";
    const cents = usd.toFixed(2);
    return Math.abs(Number(cents) - usd) < 1e-9 ? `$${cents}` : `$${usd.toFixed(6).replace(/0+$/, "")}`;
  }

  /** @param {number} n */
  function bytes(n) {
    return n >= 1048576 ? `${(n / 1048576).toFixed(1)} MiB` : `${(n / 1024).toFixed(0)} KiB`;
  }

  /** @param {number} n */
  function count(n) {
    return n.toLocaleString("en-US");
  }

  /**
   * A test's full name split into its describe path and its own name.
   * @param {string} name
   */
  function parts(name) {
    const path = name.split(" > ");
    const test = path.pop() ?? "";
    return { describe: path.join(" > "), test };
  }

  /** @param {TestRow} t */
  function statusOf(t) {
    return at(statuses, t[COL.status]);
  }

  /**
   * Tests per status over all tests, and the flaky ones apart (under "flaky").
   * @returns {Map<string, number>}
   */
  function statusCounts() {
    const byStatus = new Map([...statuses, "flaky"].map((s) => [s, 0]));
    /** @param {string} key */
    const add = (key) => byStatus.set(key, (byStatus.get(key) ?? 0) + 1);
    for (const t of tests) {
      add(statusOf(t));
      if (t[COL.flaky]) add("flaky");
    }
    return byStatus;
  }

  /**
   * Shows a filter's count (hidden when none) and makes a click toggle it; "all" clears the others.
   * @param {Element} button
   */
  function wireFilter(button) {
    const status = button.getAttribute("data-status") ?? "";
    element(".n", button).textContent = String(status === "all" ? tests.length : (counts.get(status) ?? 0));
    if (status !== "all" && !counts.get(status)) button.classList.add("empty");
    button.addEventListener("click", () => {
      if (status === "all") selected.clear();
      else if (selected.has(status)) selected.delete(status);
      else selected.add(status);
      for (const other of filterButtons) {
        const s = other.getAttribute("data-status") ?? "";
        other.setAttribute("aria-pressed", String(s === "all" ? selected.size === 0 : selected.has(s)));
      }
      apply();
    });
  }

  /**
   * Whether test `i` passes the shard filter, the status filters and the search.
   * @param {TestRow} t
   * @param {number} i
   */
  function matches(t, i) {
    if (shardFilter >= 0 && t[COL.shard] !== shardFilter) return false;
    if (selected.size > 0 && !selected.has(statusOf(t)) && !(t[COL.flaky] === 1 && selected.has("flaky"))) return false;
    return !query || searchText(i).includes(query);
  }

  /** @param {number} i */
  function searchText(i) {
    if (!haystack) {
      haystack = tests.map((t) =>
        [at(files, t[COL.file]), t[COL.name], t[COL.failureMessage] || "", t[COL.failureDetails] || ""]
          .join("\u0000")
          .toLowerCase(),
      );
    }
    return at(haystack, i);
  }

  /** Filters the tests again and draws the table from its top. */
  function apply() {
    /** @type {number[]} */
    const through = [];
    if (order) {
      for (const i of order) if (matches(at(tests, i), i)) through.push(i);
    } else {
      tests.forEach((t, i) => {
        if (matches(t, i)) through.push(i);
      });
    }
    visible = grouped ? byFile(through) : through;
    spacer.style.height = `${visible.length * ROW_HEIGHT}px`;
    // As tall as its rows, up to the style sheet's max-height: a filter leaving 3 rows leaves no empty box.
    rowsBox.style.height = `${Math.max(1, visible.length) * ROW_HEIGHT}px`;
    countEl.textContent = `showing ${count(through.length)} of ${count(tests.length)} tests`;
    rowsBox.scrollTop = 0;
    draw(true);
  }

  /**
   * Sorts the table by column `key`: a new column ascending, the same one descending, a third click the run's order.
   * @param {string} key
   */
  function sortBy(key) {
    if (key !== sortKey) {
      sortKey = key;
      sortDir = 1;
    } else if (sortDir === 1) sortDir = -1;
    else sortKey = "";
    for (const button of sortButtons) {
      const on = button.getAttribute("data-sort") === sortKey;
      const header = button.parentElement;
      if (on) header?.setAttribute("aria-sort", sortDir === 1 ? "ascending" : "descending");
      else header?.removeAttribute("aria-sort");
      element(".arrow", button).textContent = on ? (sortDir === 1 ? " ▲" : " ▼") : "";
    }
    order = sortKey ? sorted(sortKey, sortDir) : null;
    apply();
  }

  /**
   * Every test's position in the order of column `key` (`dir` 1 ascending, -1 descending), ties in the run's order;
   * a test without a value (no cost; a duration never measured) last either way. One sort per click, keys read once.
   * @param {string} key
   * @param {number} dir
   */
  function sorted(key, dir) {
    const keys = Float64Array.from(tests, (t) => sortValue(t, key));
    return tests
      .map((_, i) => i)
      .sort((a, b) => {
        const x = keys[a] ?? Number.NaN;
        const y = keys[b] ?? Number.NaN;
        if (Number.isNaN(x) || Number.isNaN(y))
          return Number.isNaN(x) === Number.isNaN(y) ? a - b : Number.isNaN(x) ? 1 : -1;
        return (x - y) * dir || a - b;
      });
  }

  /**
   * A test's value in column `key`; NaN when it has none.
   * @param {TestRow} t
   * @param {string} key
   */
  function sortValue(t, key) {
    if (key === "cost") return t[COL.usd] ?? Number.NaN;
    if (key === "duration") return NEVER_RAN.has(statusOf(t)) ? Number.NaN : t[COL.durationMs];
    if (key === "retries") return t[COL.retries];
    const rank = STATUS_ORDER.indexOf(statusOf(t));
    return rank < 0 ? STATUS_ORDER.length : rank;
  }

  /**
   * `list` (positions in `tests`) by file, in the order files first appear, each file's heading (`-1 - file`) first.
   * @param {number[]} list
   */
  function byFile(list) {
    /** @type {Map<number, number[]>} */
    const groups = new Map();
    for (const i of list) {
      const f = at(tests, i)[COL.file];
      const group = groups.get(f);
      if (group) group.push(i);
      else groups.set(f, [i]);
    }
    tallies.clear();
    for (const [f, members] of groups) {
      const notPassed = members.filter((i) => !PASSING.has(statusOf(at(tests, i)))).length;
      tallies.set(f, { shown: members.length, notPassed });
    }
    return [...groups].flatMap(([f, members]) => [-1 - f, ...members]);
  }

  /**
   * A file's heading row when grouped: its path, and how many of its tests are shown and did not pass.
   * @param {number} f a position in `files`
   */
  function groupEl(f) {
    const { shown, notPassed } = tallies.get(f) ?? { shown: 0, notPassed: 0 };
    const row = el("div", "row group");
    row.setAttribute("role", "row");
    const file = at(files, f);
    const label = row.appendChild(el("span", "file"));
    label.title = file;
    label.appendChild(el("span", "path", file)).dir = "ltr";
    const tally = `${count(shown)} test${shown === 1 ? "" : "s"}`;
    row.appendChild(el("span", "tally", notPassed ? `${tally}, ${count(notPassed)} not passed` : tally));
    return row;
  }

  /**
   * Draws the rows in view and a few beyond, and removes those scrolled away; `reset` redraws every row.
   * @param {boolean} reset
   */
  function draw(reset) {
    if (reset) {
      spacer.textContent = "";
      drawn.clear();
    }
    const top = rowsBox.scrollTop;
    const height = rowsBox.clientHeight || 600;
    const from = Math.max(0, Math.floor(top / ROW_HEIGHT) - OVERSCAN);
    const to = Math.min(visible.length, Math.ceil((top + height) / ROW_HEIGHT) + OVERSCAN);
    for (const [p, row] of drawn) {
      if (p < from || p >= to) {
        row.remove();
        drawn.delete(p);
      }
    }
    for (let p = from; p < to; p++) {
      if (drawn.has(p)) continue;
      const item = at(visible, p);
      const row = item < 0 ? groupEl(-1 - item) : rowEl(item);
      row.style.top = `${p * ROW_HEIGHT}px`;
      spacer.appendChild(row);
      drawn.set(p, row);
    }
  }

  /**
   * The table row of test `i`.
   * @param {number} i
   */
  function rowEl(i) {
    const t = at(tests, i);
    const status = statusOf(t);
    const file = at(files, t[COL.file]);
    const name = parts(t[COL.name]);
    const row = el("div", i === openRow ? "row open" : "row");
    row.setAttribute("role", "row");
    row.tabIndex = 0;
    row.setAttribute("data-test", String(i));
    // Cut from the left (the style sheet's rtl cell), the inner span keeping the path's own order: the name stays.
    const fileCell = row.appendChild(el("span", "file"));
    fileCell.title = file;
    fileCell.appendChild(el("span", "path", file)).dir = "ltr";
    row.appendChild(el("span", "describe", name.describe)).title = name.describe;
    row.appendChild(el("span", "name", name.test)).title = name.test;
    const cell = el("span", "status");
    cell.appendChild(el("span", `badge st-${status}`, status));
    if (t[COL.flaky]) {
      cell.appendChild(document.createTextNode(" "));
      cell.appendChild(el("span", "badge flaky", "flaky"));
    }
    if (t[COL.quarantined]) {
      cell.appendChild(document.createTextNode(" "));
      cell.appendChild(el("span", "badge quarantined", "quarantined"));
    }
    const strip = stripEl(i);
    if (strip) cell.appendChild(strip);
    row.appendChild(cell);
    row.appendChild(el("span", "num", ranFor(t)));
    row.appendChild(el("span", "num", String(t[COL.retries])));
    if (withCost) row.appendChild(el("span", "num cost", costOf(t)));
    return row;
  }

  /**
   * Opens the detail of the table row `target` is in, if it is in one.
   * @param {EventTarget | null} target
   */
  function openFrom(target) {
    const row = target instanceof Element ? target.closest(".row[data-test]") : null;
    if (row) showDetail(Number(row.getAttribute("data-test")));
  }

  /**
   * A heading over preformatted text.
   * @param {string} title
   * @param {string} text
   */
  function section(title, text) {
    const box = el("div");
    box.appendChild(el("h4", "", title));
    box.appendChild(el("pre", "", text));
    return box;
  }

  /**
   * Shows test `i` in the side panel (always in view): its facts, failure, failed attempts and its shard's log tail;
   * the URL's fragment becomes the test's link.
   * @param {number} i
   */
  function showDetail(i) {
    const t = at(tests, i);
    const shard = at(shards, t[COL.shard]);
    const status = statusOf(t);
    openRow = i;
    for (const row of drawn.values()) row.classList.toggle("open", Number(row.getAttribute("data-test")) === i);
    detail.textContent = "";
    const close = el("button", "close", "close");
    close.type = "button";
    close.title = "close (Escape)";
    close.addEventListener("click", closeDetail);
    detail.appendChild(close);
    detail.appendChild(el("h3", "", t[COL.name]));
    const meta = el("p");
    meta.appendChild(el("span", `badge st-${status}`, status));
    meta.appendChild(document.createTextNode(` ${testFacts(t)}`));
    detail.appendChild(meta);
    const past = historyPart(i);
    if (past) detail.appendChild(past);
    const link = el("a", "link", "link to this test");
    link.href = linkOf(t);
    detail.appendChild(link);
    if (t[COL.failureType]) detail.appendChild(section(`Failure (${t[COL.failureType]})`, failureText(t)));
    const attempts = t[COL.attempts];
    if (attempts) detail.appendChild(section("Failed attempts", attempts));
    detail.appendChild(el("p", "", `Shard ${shard.index} (${shard.status}): ${shard.reason}`));
    detail.appendChild(logPart(shard));
    detail.hidden = false;
    if (location.hash !== link.getAttribute("href")) history.replaceState(null, "", linkOf(t));
    close.focus({ preventScroll: true });
  }

  /** Closes the side panel and drops the test's link from the URL; the open row gets the focus back. */
  function closeDetail() {
    if (detail.hidden) return;
    detail.hidden = true;
    const was = openRow;
    openRow = -1;
    if (location.hash.startsWith(LINK_PREFIX)) history.replaceState(null, "", location.pathname + location.search);
    draw(true);
    const row = spacer.querySelector(`.row[data-test="${was}"]`);
    if (row instanceof HTMLElement) row.focus({ preventScroll: true });
  }

  /**
   * A test's link: `#test=` and its file and name, URI-encoded.
   * @param {TestRow} t
   */
  function linkOf(t) {
    return LINK_PREFIX + encodeURIComponent(`${at(files, t[COL.file])} > ${t[COL.name]}`);
  }

  /** Opens the test the URL's fragment names (its first row of that file and name), scrolling its row into view. */
  function openFromLink() {
    if (!location.hash.startsWith(LINK_PREFIX)) return;
    let key = "";
    try {
      key = decodeURIComponent(location.hash.slice(LINK_PREFIX.length));
    } catch {
      return;
    }
    const i = tests.findIndex((t) => `${at(files, t[COL.file])} > ${t[COL.name]}` === key);
    if (i < 0) return;
    const p = visible.indexOf(i);
    if (p >= 0) {
      rowsBox.scrollTop = Math.max(0, p * ROW_HEIGHT - rowsBox.clientHeight / 2);
      draw(false);
    }
    showDetail(i);
  }

  /**
   * A test's failure text, once: Bun's JUnit text (details) usually repeats the message, so it alone is shown then.
   * @param {TestRow} t
   */
  function failureText(t) {
    const message = t[COL.failureMessage] || "";
    const details = t[COL.failureDetails] || "";
    const first = message.split("\n", 1)[0] ?? "";
    if (!details) return message;
    return details.includes(first) ? details : `${message}\n\n${details}`;
  }

  /**
   * A test's file and line, duration, retries and flakiness, for its detail.
   * @param {TestRow} t
   */
  function testFacts(t) {
    const retries = `${t[COL.retries]} retr${t[COL.retries] === 1 ? "y" : "ies"}`;
    const facts = [at(files, t[COL.file]) + (t[COL.line] ? `:${t[COL.line]}` : ""), ranFor(t), retries];
    if (t[COL.flaky]) facts.push("flaky");
    if (t[COL.usd] !== null && t[COL.usd] !== undefined) facts.push(`spent ${costOf(t)}`);
    if (t[COL.quarantined]) facts.push("quarantined: its failure does not fail the run");
    return facts.join(" · ");
  }

  /**
   * Test `i`'s strip of outcomes, a cell per run it has one in, oldest first; null without a history.
   * @param {number} i
   */
  function stripEl(i) {
    const entry = data.history?.strips[i];
    if (!entry || !data.history) return null;
    const runs = data.history.runs;
    const box = el("span", "strip");
    box.setAttribute("aria-label", `last ${[...entry[0]].filter((c) => c !== ".").length} outcomes`);
    [...entry[0]].forEach((c, n) => {
      if (c === ".") return;
      const status = at(statuses, Number.parseInt(c, 36));
      const cell = box.appendChild(el("i", `st-${status}`));
      cell.title = `run ${at(runs, n)}${n === runs.length - 1 ? " (this run)" : ""}: ${status}`;
    });
    return box;
  }

  /**
   * The detail's history: test `i`'s strip and "flip rate 40% over 20 runs"; null without a history.
   * @param {number} i
   */
  function historyPart(i) {
    const entry = data.history?.strips[i];
    const strip = stripEl(i);
    if (!entry || !strip) return null;
    const box = el("p", "history");
    box.appendChild(strip);
    const flip = el("span", "flip-rate", ` flip rate ${Math.round(entry[1] * 100)}% over ${count(entry[2])} run`);
    if (entry[2] !== 1) flip.textContent += "s";
    box.appendChild(flip);
    return box;
  }

  /**
   * The detail's last part: the shard's log tail, else where its log is.
   * @param {Shard} shard
   */
  function logPart(shard) {
    if (shard.tail) {
      return section(`Log tail of shard ${shard.index}${shard.logPath ? ` (${shard.logPath})` : ""}`, shard.tail);
    }
    return el("p", "muted", shard.logPath ? `Full log: ${shard.logPath}` : "No log was written for this shard.");
  }

  /**
   * Shows only the tests of shard `n` (a position in `shards`), or those of every shard for -1.
   * @param {number} n
   */
  function setShardFilter(n) {
    shardFilter = n;
    shardFilterEl.textContent = "";
    if (n >= 0) {
      shardFilterEl.appendChild(document.createTextNode(`shard ${at(shards, n).index} only `));
      const clear = el("button", "", "×");
      clear.type = "button";
      clear.setAttribute("aria-label", "show every shard");
      clear.addEventListener("click", () => setShardFilter(-1));
      shardFilterEl.appendChild(clear);
    }
    shardFilterEl.hidden = n < 0;
    apply();
  }

  /**
   * A timeline bar shows its shard's tooltip on hover and on keyboard focus, and filters the table by a click or Enter.
   * @param {SVGElement} bar
   */
  function wireBar(bar) {
    const shard = Number(bar.getAttribute("data-shard"));
    bar.addEventListener("mouseenter", () => showTip(bar, shard));
    bar.addEventListener("mouseleave", hideTip);
    bar.addEventListener("focus", () => showTip(bar, shard));
    bar.addEventListener("blur", hideTip);
    bar.addEventListener("click", () => setShardFilter(shard));
    bar.addEventListener("keydown", (e) => {
      if (e.key === "Enter") setShardFilter(shard);
    });
  }

  /**
   * Fills the tooltip with shard `n` and places it below its bar, or above when there is no room below.
   * @param {Element} bar
   * @param {number} n
   */
  function showTip(bar, n) {
    const s = at(shards, n);
    tip.textContent = "";
    tip.appendChild(el("h3", "", `Shard ${s.index}: ${s.status}`));
    tip.appendChild(fileList(s.files));
    tip.appendChild(el("p", "", s.reason));
    tip.appendChild(el("p", "", runFacts(s).join(" · ")));
    if (s.resources) tip.appendChild(el("p", "resources", resourceFacts(s.resources).join(" · ")));
    const held = lockFacts(s);
    if (held.length) tip.appendChild(el("p", "locks", held.join(" · ")));
    if (s.leftovers) {
      const processes = `${s.leftovers} leftover process${s.leftovers === 1 ? "" : "es"}`;
      tip.appendChild(el("p", "", `${processes} killed by the sweep`));
    }
    for (const note of s.notes) tip.appendChild(el("p", "", note));
    const box = bar.getBoundingClientRect();
    tip.hidden = false;
    tip.style.left = `${Math.max(4, Math.min(box.left, window.innerWidth - tip.offsetWidth - 8))}px`;
    const below = box.bottom + 6;
    const above = box.top - tip.offsetHeight - 6;
    tip.style.top = `${below + tip.offsetHeight > window.innerHeight && above > 0 ? above : below}px`;
  }

  function hideTip() {
    tip.hidden = true;
  }

  /**
   * A shard's files as a list, the first few of them and how many more.
   * @param {string[]} names
   */
  function fileList(names) {
    const list = el("ul");
    for (const name of names.slice(0, TIP_FILES)) list.appendChild(el("li", "", name));
    if (names.length > TIP_FILES) list.appendChild(el("li", "", `… ${names.length - TIP_FILES} more`));
    return list;
  }

  /**
   * How long a shard ran, when its group was gone and signalled, and how it ended.
   * @param {Shard} s
   */
  function runFacts(s) {
    const facts = [`ran ${secs(s.durationMs)}`];
    const tl = s.timeline;
    if (tl) {
      facts.push(`group gone at ${secs(tl.goneMs)}`);
      if (tl.sigtermMs !== null) facts.push(`SIGTERM at ${secs(tl.sigtermMs)}`);
      if (tl.sigkillMs !== null) facts.push(`SIGKILL at ${secs(tl.sigkillMs)}`);
    }
    facts.push(s.signal ? `signal ${s.signal}` : `exit ${s.exitCode}`);
    if (s.cost !== null) facts.push(`spent ${s.cost}`);
    return facts;
  }

  /** @param {Resources} r */
  function resourceFacts(r) {
    const facts = [`wall ${secs(r.wallMs)}`];
    if (r.cpuUserMs !== null) facts.push(`CPU user ${secs(r.cpuUserMs)}`);
    if (r.cpuSystemMs !== null) facts.push(`system ${secs(r.cpuSystemMs)}`);
    if (r.peakRssBytes !== null) facts.push(`peak RSS ${bytes(r.peakRssBytes)}`);
    facts.push(`measured by ${r.method} (${r.precision})`);
    return facts;
  }

  /**
   * Whether a shard ran alone, the resources it held and how long it waited for them.
   * @param {Shard} s
   */
  function lockFacts(s) {
    const facts = s.exclusive ? ["ran alone (exclusive)"] : [];
    if (s.locks.length) facts.push(`held ${s.locks.join(", ")}`);
    if (s.waited) facts.push(`waited ${secs(s.waited.ms)} for ${s.waited.for.join(", ")}`);
    return facts;
  }
})();
