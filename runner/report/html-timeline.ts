/**
 * report.html's timeline (report/html.ts): one lane per job slot, each
 * started shard a bar from its spawn until its process group was gone,
 * coloured by status, with its kill signals marked, drawn as SVG from the
 * result model. Idle slot time is the lane's hatched background left
 * uncovered; the longest chain is the lane whose last shard ended last.
 */
import type { RunReport, ShardResult } from "../results/report-model.ts";
import { escapeHtml } from "./html-text.ts";

/** One started shard on a lane. Times in ms after the layout's origin. */
export interface TimelineBar {
  /** Position of the shard in `report.shards` (0-based). */
  shard: number;
  startMs: number;
  /** The child's exit. */
  exitMs: number;
  /** Its process group gone: the end of the bar (the exit when the report has no timeline for it). */
  endMs: number;
  sigtermMs: number | null;
  sigkillMs: number | null;
}

/** One job slot of one machine (a slice, in a merged report). */
export interface TimelineLane {
  /** The slice that ran it in a merged report; null for a run's own report. */
  slice: number | null;
  /** 1-based job slot. */
  slot: number;
  bars: TimelineBar[];
  /** Time no shard held this slot between its machine's first spawn and last group gone, ms. */
  idleMs: number;
}

/** What {@link layoutTimeline} computes from a report. */
export interface TimelineLayout {
  /** Epoch ms of the earliest spawn (the run's start when nothing started). */
  originMs: number;
  /** Length of the axis, ms (at least 1). */
  spanMs: number;
  lanes: TimelineLane[];
  /** Sum of every lane's busy and idle time, ms. */
  busyMs: number;
  idleMs: number;
  /**
   * The lane (index in `lanes`) whose last shard's group was gone last, and its shards in order; null when nothing
   * started.
   */
  chain: { lane: number; shards: number[]; busyMs: number } | null;
}

/** The slice of each shard of a merged report (by its files, from the plan manifest); null for a run's own report. */
function sliceOf(report: RunReport): (shard: ShardResult) => number | null {
  if (!report.merged || !report.plan) return () => null;
  const byFile = new Map(report.plan.shards.flatMap((s) => s.files.map((f) => [f, s.slice] as const)));
  return (shard) => byFile.get(shard.files[0]!) ?? null;
}

/**
 * The lanes and bars of a report's timeline. A shard without `timeline`
 * (a report of an earlier version) gets the lowest slot free at its spawn.
 * Shards that never started have no bar.
 */
export function layoutTimeline(report: RunReport): TimelineLayout {
  const slice = sliceOf(report);
  const started = report.shards
    .map((shard, i) => ({ shard, i, at: shard.startedAt === null ? NaN : Date.parse(shard.startedAt) }))
    .filter((s) => Number.isFinite(s.at));
  const originMs = started.length > 0 ? Math.min(...started.map((s) => s.at)) : Date.parse(report.startedAt) || 0;
  const lanes = new Map<string, TimelineLane>();
  const lane = (sliceIndex: number | null, slot: number) => {
    const key = `${sliceIndex ?? 0}:${slot}`;
    let found = lanes.get(key);
    if (!found) lanes.set(key, (found = { slice: sliceIndex, slot, bars: [], idleMs: 0 }));
    return found;
  };
  const unplaced: { bar: TimelineBar; slice: number | null }[] = [];
  for (const { shard, i, at } of started.sort((a, b) => a.at - b.at)) {
    const t = shard.timeline;
    const startMs = at - originMs;
    const exitMs = startMs + shard.durationMs;
    const bar: TimelineBar = {
      shard: i,
      startMs,
      exitMs,
      endMs: t ? startMs + Math.max(t.goneMs, shard.durationMs) : exitMs,
      sigtermMs: t?.sigtermMs != null ? startMs + t.sigtermMs : null,
      sigkillMs: t?.sigkillMs != null ? startMs + t.sigkillMs : null,
    };
    if (t) lane(slice(shard), t.slot).bars.push(bar);
    else unplaced.push({ bar, slice: slice(shard) });
  }
  for (const { bar, slice: s } of unplaced) {
    let slot = 1;
    for (; ; slot++) {
      const last = lanes.get(`${s ?? 0}:${slot}`)?.bars.at(-1);
      if (!last || last.endMs <= bar.startMs) break;
    }
    lane(s, slot).bars.push(bar);
  }
  // Every slot a machine could have used is drawn, used or not: idle slots are the point. A plan
  // of fewer shards than --jobs could never fill the rest, so those are not drawn as idle.
  const machines = new Set([...lanes.values()].map((l) => l.slice ?? 0));
  for (const m of machines) {
    const shardsThere = [...lanes.values()].filter((l) => (l.slice ?? 0) === m).reduce((n, l) => n + l.bars.length, 0);
    const usable = Math.max(
      Math.min(report.settings.jobs, shardsThere),
      ...[...lanes.values()].filter((l) => (l.slice ?? 0) === m).map((l) => l.slot),
    );
    for (let slot = 1; slot <= usable; slot++) lane(m === 0 ? null : m, slot);
  }
  const ordered = [...lanes.values()].sort((a, b) => (a.slice ?? 0) - (b.slice ?? 0) || a.slot - b.slot);
  let busyMs = 0;
  let idleMs = 0;
  for (const m of machines) {
    const of = ordered.filter((l) => (l.slice ?? 0) === m);
    const bars = of.flatMap((l) => l.bars);
    const from = Math.min(...bars.map((b) => b.startMs));
    const to = Math.max(...bars.map((b) => b.endMs));
    for (const l of of) {
      l.bars.sort((a, b) => a.startMs - b.startMs);
      const busy = l.bars.reduce((n, b) => n + (b.endMs - b.startMs), 0);
      l.idleMs = Math.max(0, to - from - busy);
      busyMs += busy;
      idleMs += l.idleMs;
    }
  }
  const ends = ordered.map((l) => l.bars.at(-1)?.endMs ?? -Infinity);
  const last = ends.indexOf(Math.max(...ends));
  const chainLane = ordered[last];
  const chain =
    chainLane && chainLane.bars.length > 0
      ? {
          lane: last,
          shards: chainLane.bars.map((b) => b.shard),
          busyMs: chainLane.bars.reduce((n, b) => n + (b.endMs - b.startMs), 0),
        }
      : null;
  const spanMs = Math.max(1, ...ordered.flatMap((l) => l.bars.map((b) => b.endMs)));
  return { originMs, spanMs, lanes: ordered, busyMs, idleMs, chain };
}

/** The label of a lane: "slot 2", or "slice 3 · slot 2" in a merged report. */
export function laneLabel(lane: TimelineLane): string {
  return lane.slice === null ? `slot ${lane.slot}` : `slice ${lane.slice} · slot ${lane.slot}`;
}

const LANE_PX = 26;
const BAR_PX = 18;
const LABEL_PX = 120;
const WIDTH = 1000;
/** The narrowest bar, in viewBox units (4 px on a 1,000 px timeline): a 26 ms shard of a long run stays visible. */
const MIN_BAR = 4;

/** A round step for about eight axis ticks over `spanMs`, ms. */
function tickStep(spanMs: number): number {
  const raw = spanMs / 8;
  const power = 10 ** Math.floor(Math.log10(raw));
  return [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power;
}

const secondsText = (ms: number) =>
  ms >= 10_000 ? `${Math.round(ms / 1000)} s` : `${(ms / 1000).toFixed(ms >= 1000 ? 1 : 2)} s`;

/**
 * The timeline as an SVG element: lanes with a hatched idle background over
 * their machine's busy span, a bar per started shard (class `bar` and
 * `st-<status>`, `tabindex=0`, `data-shard` its position in
 * `report.shards`), a SIGTERM line (`term`), the grace period until the
 * exit or SIGKILL (`grace`) and a SIGKILL line (`kill`), the chain's bars
 * with class `chain`, and a time axis.
 */
export function timelineSvg(report: RunReport, layout: TimelineLayout): string {
  const plot = WIDTH - LABEL_PX - 10;
  const x = (ms: number) => LABEL_PX + (ms / layout.spanMs) * plot;
  const height = layout.lanes.length * LANE_PX + 24;
  const out: string[] = [
    `<svg id="timeline" viewBox="0 0 ${WIDTH} ${height}" width="100%" role="img" aria-label="shard timeline: ` +
      `${layout.lanes.length} lanes" xmlns="http://www.w3.org/2000/svg">`,
    `<defs><pattern id="idle" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect ` +
      `width="6" height="6" class="idle-bg"/><line x1="0" y1="0" x2="0" y2="6" class="idle-line"/></pattern></defs>`,
  ];
  const chainSet = new Set(layout.chain?.shards ?? []);
  const spans = new Map<number, [number, number]>();
  for (const l of layout.lanes) {
    const m = l.slice ?? 0;
    const [from, to] = spans.get(m) ?? [Infinity, -Infinity];
    spans.set(m, [Math.min(from, ...l.bars.map((b) => b.startMs)), Math.max(to, ...l.bars.map((b) => b.endMs))]);
  }
  layout.lanes.forEach((l, n) => {
    const y = n * LANE_PX;
    const [from, to] = spans.get(l.slice ?? 0)!;
    const chainMark = layout.chain?.lane === n ? ' class="lane-label chain-label"' : ' class="lane-label"';
    out.push(
      `<g class="lane" data-lane="${n}"><text x="4" ` +
        `y="${y + LANE_PX / 2 + 4}"${chainMark}>${escapeHtml(laneLabel(l))}</text>`,
    );
    if (to > from)
      out.push(
        `<rect class="idle" x="${x(from).toFixed(1)}" y="${y + 4}" width="${(x(to) - x(from)).toFixed(1)}" ` +
          `height="${BAR_PX}" fill="url(#idle)"><title>idle ${escapeHtml(secondsText(l.idleMs))}</title></rect>`,
      );
    for (const b of l.bars) {
      const shard = report.shards[b.shard]!;
      const x0 = x(b.startMs);
      const w = Math.max(MIN_BAR, x(b.endMs) - x0);
      const label =
        `shard ${shard.index}, ${shard.status}, ${secondsText(b.endMs - b.startMs)}: ` + `${shard.files.join(", ")}`;
      out.push(
        `<g class="bar st-${shard.status}${chainSet.has(b.shard) ? " chain" : ""}" tabindex="0" role="button" ` +
          `data-shard="${b.shard}" aria-label="${escapeHtml(label.slice(0, 300))}">`,
        `<rect x="${x0.toFixed(1)}" y="${y + 4}" width="${w.toFixed(1)}" height="${BAR_PX}" rx="2"/>`,
      );
      if (b.sigtermMs !== null) {
        const t = x(b.sigtermMs);
        const graceEnd = x(b.sigkillMs ?? b.exitMs);
        if (graceEnd > t)
          out.push(
            `<rect class="grace" x="${t.toFixed(1)}" y="${y + 4}" width="${(graceEnd - t).toFixed(1)}" ` +
              `height="${BAR_PX}"/>`,
          );
        out.push(
          `<line class="term" x1="${t.toFixed(1)}" x2="${t.toFixed(1)}" y1="${y + 1}" y2="${y + LANE_PX - 1}"/>`,
        );
      }
      if (b.sigkillMs !== null) {
        const k = x(b.sigkillMs).toFixed(1);
        out.push(`<line class="kill" x1="${k}" x2="${k}" y1="${y + 1}" y2="${y + LANE_PX - 1}"/>`);
      }
      out.push("</g>");
    }
    out.push("</g>");
  });
  const axisY = layout.lanes.length * LANE_PX + 4;
  out.push(`<g class="axis"><line x1="${LABEL_PX}" x2="${WIDTH - 10}" y1="${axisY}" y2="${axisY}"/>`);
  const step = tickStep(layout.spanMs);
  for (let t = 0; t <= layout.spanMs + 1e-9; t += step) {
    const tx = x(t).toFixed(1);
    out.push(
      `<line x1="${tx}" x2="${tx}" y1="${axisY}" y2="${axisY + 4}"/><text x="${tx}" y="${axisY + 16}" ` +
        `text-anchor="middle">${escapeHtml(secondsText(t))}</text>`,
    );
  }
  out.push("</g></svg>");
  return out.join("");
}

/** The sentence under the timeline: idle slot time and the longest chain. */
export function timelineCaption(report: RunReport, layout: TimelineLayout): string {
  const total = layout.busyMs + layout.idleMs;
  const idle =
    total > 0
      ? `idle slot time ${secondsText(layout.idleMs)} of ${secondsText(total)} ` +
        `(${Math.round((100 * layout.idleMs) / total)}%)`
      : "no shard started";
  if (!layout.chain) return idle;
  const lane = layout.lanes[layout.chain.lane]!;
  const files = layout.chain.shards.map((i) => report.shards[i]!.files.join(" + "));
  const shown = files.length > 6 ? [...files.slice(0, 3), `… ${files.length - 5} more …`, ...files.slice(-2)] : files;
  return (
    `${idle}; longest chain: ${laneLabel(lane)}, ${layout.chain.shards.length} ` +
    `shard${layout.chain.shards.length === 1 ? "" : "s"}, ${secondsText(layout.chain.busyMs)} busy: ` +
    `${shown.join(" → ")}`
  );
}
