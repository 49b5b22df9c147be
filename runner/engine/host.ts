/**
 * What a command needs from its process: environment, cwd, output, signals. The CLI and the preset preload pass
 * the real process (cli/process-host.ts); tests and embedders their own.
 */
export interface Host {
  env: Record<string, string | undefined>;
  cwd: string;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Registers the cancellation handler for SIGINT / SIGTERM; may return a function that removes it. */
  // biome-ignore lint/suspicious/noConfusingVoidType: a host may return nothing (test hosts do)
  onSignal: (handler: (signal: "SIGINT" | "SIGTERM") => void) => void | (() => void);
  /** Raw stdout writer (no newline added), for the live status area. */
  write?: (text: string) => void;
  /** True when stdout is a terminal: live status area instead of heartbeat lines. */
  isTTY?: boolean;
  columns?: number;
}

/**
 * Carries a `shardguard bg` run's id into the run it starts, so SHARDGUARD_RUN_ID, the bg log and OUT/runs/ share
 * one id (docs/background.md); no shard child sees it, so a shardguard inside a test makes its own.
 */
export const BG_RUN_ID_ENV = "SHARDGUARD_BG_RUN_ID";
