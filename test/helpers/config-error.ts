/**
 * Assertions on the one-line ConfigError that every bad input must give
 * (exit 2, one line naming what is wrong and what is accepted).
 */
import { expect } from "bun:test";
import { ConfigError } from "../../runner/config/settings-schema.ts";

/** Awaits `fn`, expecting a one-line ConfigError; returns its message. */
export async function configErrorAsync(fn: () => Promise<unknown>): Promise<string> {
  try {
    await fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).not.toContain("\n");
    return (error as Error).message;
  }
  throw new Error("expected a ConfigError");
}
