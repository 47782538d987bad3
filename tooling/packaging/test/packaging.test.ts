/**
 * The packages as a user gets them: `npm pack` of every published package (after `npm run build`), unpacked into
 * an app outside the workspace the way npm installs a tarball, then type-checked under every module resolution the
 * README promises and run once. No registry is reached: the app's third-party dependencies are the workspace's
 * own installed copies, linked in (npm cannot resolve them offline from a fresh cache).
 */
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { migrationStatementsFor } from "@idemkit/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const CONSUMER = fileURLToPath(new URL("../consumer/", import.meta.url));
const PACKAGES = [
  "core",
  "command-line",
  "postgres-js-guard",
  "drizzle",
  "outbox",
  "next",
  "trpc",
  "react",
  "pg-boss",
  "redis",
  "dynamodb",
  "playwright",
] as const;
/** What the consumer app imports besides idemkit, at the versions the workspace tests with. */
const THIRD_PARTY = [
  "@aws-sdk/client-dynamodb",
  "@electric-sql/pglite",
  "@noble/hashes",
  "@opentelemetry/api",
  "@playwright/test",
  "@tanstack/react-query",
  "@trpc/client",
  "@trpc/react-query",
  "@trpc/server",
  "@trpc/tanstack-react-query",
  "@types/node",
  "@types/react",
  "drizzle-orm",
  "next",
  "pg-boss",
  "react",
  "vitest",
];
const TSC = createRequire(import.meta.url).resolve("typescript/bin/tsc");

interface PackedFile {
  path: string;
  mode: number;
}

let temp: string;
let app: string;
const packed = new Map<string, PackedFile[]>();

beforeAll(async () => {
  temp = await mkdtemp(join(tmpdir(), "idemkit-packaging-"));
  app = join(temp, "app");
  const tarballs = join(temp, "tarballs");
  await mkdir(tarballs, { recursive: true });
  for (const name of PACKAGES) {
    const folder = join(ROOT, "packages", name);
    if (!existsSync(join(folder, "dist", "index.js"))) throw new Error(`packages/${name} is not built: npm run build`);
    const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", tarballs], { cwd: folder });
    const [result] = JSON.parse(stdout) as Array<{ filename: string; files: PackedFile[] }>;
    if (!result) throw new Error(`npm pack printed nothing for ${name}`);
    packed.set(name, result.files);
    const installed = join(app, "node_modules", "@idemkit", name);
    await mkdir(installed, { recursive: true });
    await run("tar", ["-xzf", join(tarballs, result.filename), "-C", installed, "--strip-components=1"]);
  }
  for (const name of THIRD_PARTY) {
    const target = join(app, "node_modules", name);
    await mkdir(dirname(target), { recursive: true });
    await symlink(join(ROOT, "node_modules", name), target, "dir");
  }
  await writeFile(join(app, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  for (const file of ["app.ts", "entries.ts"]) await copyFile(join(CONSUMER, file), join(app, file));
  await writeFile(join(app, "schema.sql"), migrationStatementsFor("idempotency_keys").join("\n"));
}, 120_000);

afterAll(async () => {
  if (temp) await rm(temp, { recursive: true, force: true });
});

describe("the tarballs", () => {
  it.each(PACKAGES)("@idemkit/%s holds its README, the LICENSE and compiled code with types, nothing else", (name) => {
    const paths = (packed.get(name) ?? []).map((file) => file.path).sort();
    expect(paths).toEqual(
      expect.arrayContaining(["LICENSE", "README.md", "package.json", "dist/index.js", "dist/index.d.ts"]),
    );
    const others = paths.filter((path) => !["LICENSE", "README.md", "package.json"].includes(path));
    expect(others.filter((path) => !/^dist\/.+\.(js|d\.ts)$/.test(path))).toEqual([]);
    expect(others.filter((path) => path.includes(".test."))).toEqual([]);
  });

  it.each(["drizzle", "outbox"] as const)("ships @idemkit/%s's purge command executable", (name) => {
    const cli = packed.get(name)?.find((file) => file.path === "dist/purge-cli.js");
    expect((cli?.mode ?? 0) & 0o111).toBe(0o111);
  });
});

describe("an app outside the workspace", () => {
  const resolutions = {
    bundler: { module: "preserve", moduleResolution: "bundler" },
    node16: { module: "node16", moduleResolution: "node16" },
    nodenext: { module: "nodenext", moduleResolution: "nodenext" },
    node10: { module: "commonjs", moduleResolution: "node10" },
  };

  /** Writes a tsconfig for the app under one resolution; returns its path. */
  async function tsconfig(resolution: keyof typeof resolutions, emit: boolean): Promise<string> {
    const path = join(app, `tsconfig.${resolution}${emit ? ".emit" : ""}.json`);
    const compilerOptions = {
      ...resolutions[resolution],
      target: "es2022",
      lib: ["es2023", "dom"],
      types: ["node"],
      strict: true,
      skipLibCheck: true,
      ...(emit ? { outDir: "out" } : { noEmit: true }),
    };
    await writeFile(path, JSON.stringify({ compilerOptions, files: emit ? ["app.ts"] : ["entries.ts", "app.ts"] }));
    return path;
  }

  it.each(Object.keys(resolutions) as Array<keyof typeof resolutions>)(
    "type-checks every entry point under moduleResolution %s",
    async (resolution) => {
      const config = await tsconfig(resolution, false);
      await expect(run(process.execPath, [TSC, "-p", config], { cwd: app })).resolves.toBeDefined();
    },
    60_000,
  );

  it("runs a protected mutation twice with one key: it runs once and the second answer is the replay", async () => {
    await run(process.execPath, [TSC, "-p", await tsconfig("nodenext", true)], { cwd: app });
    const { stdout } = await run(process.execPath, [join("out", "app.js")], { cwd: app });
    const seen = JSON.parse(stdout) as { runs: number; first: string; second: string; replayed: string | null };
    expect(seen.runs).toBe(1);
    expect(seen.replayed).toBe("true");
    expect(seen.second).toBe(seen.first);
    expect(JSON.parse(seen.first)).toEqual({ result: { data: { n: 42 } } });
  }, 60_000);

  it.each(["drizzle", "outbox"] as const)(
    "prints @idemkit/%s's purge help without postgres installed, and says how to get it once a database is needed",
    async (name) => {
      const cli = join(app, "node_modules", "@idemkit", name, "dist", "purge-cli.js");
      const help = await run(cli, ["--help"], { cwd: app });
      expect(help.stdout).toMatch(/usage: DATABASE_URL=/);
      const needsDriver = await run(cli, [], {
        cwd: app,
        env: { ...process.env, DATABASE_URL: "postgres://127.0.0.1:1/none" },
      }).catch((error: { code: number; stderr: string }) => error);
      expect(needsDriver).toMatchObject({ code: 2, stderr: expect.stringMatching(/npm install postgres/) });
    },
  );
});
