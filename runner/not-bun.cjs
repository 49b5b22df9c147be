// What `require("shardguard")` resolves to outside Bun (package.json "exports";
// runner/not-bun.mjs is the `import` side, and says why).
throw new Error(
  require("node:fs").readFileSync(require("node:path").join(__dirname, "not-bun.txt"), "utf8").trim() +
    ` (this is ${process.release.name} ${process.version})`,
);
