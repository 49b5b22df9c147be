/**
 * The line near the top of every report.html shardguard writes (a meta tag
 * in its head), by which a refused run recognises an earlier run's page
 * before removing it (engine/refused.ts). Kept apart from html.ts so that
 * check loads no renderer.
 */
export const HTML_REPORT_MARK = '<meta name="generator" content="shardguard">';
