/** `main(argv, host)` from the API: a host that is not a Host is refused with a line naming what is expected. */
import { describe, expect, test } from "bun:test";
import { main, processHost } from "../runner/index.ts";

describe("main(argv, host) given a wrong host", () => {
  test("the factory instead of its result says to call it", async () => {
    const wrong = processHost as unknown as Parameters<typeof main>[1];
    await expect(main(["list"], wrong)).rejects.toThrow(
      "main(argv, host): host is a function; expected a Host: { env, cwd, stdout, stderr, onSignal }, such as " +
        "the result of processHost() (call it: processHost())",
    );
  });

  test("an object without the members names the missing ones; null and a string are refused too", async () => {
    const partial = { cwd: "/", stdout: () => {} } as unknown as Parameters<typeof main>[1];
    await expect(main(["list"], partial)).rejects.toThrow(
      "main(argv, host): host lacks env (object), stderr (function), onSignal (function); expected a Host",
    );
    for (const bad of [null, "host"]) {
      await expect(main(["list"], bad as unknown as Parameters<typeof main>[1])).rejects.toThrow(
        "main(argv, host): expected a Host",
      );
    }
  });

  test("a real host still runs the command", async () => {
    const lines: string[] = [];
    const host = { ...processHost(), stdout: (t: string) => lines.push(t), stderr: (t: string) => lines.push(t) };
    expect(await main(["version"], host)).toBe(0);
    expect(lines).toHaveLength(1);
  });
});
