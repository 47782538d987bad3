/**
 * Which Chromium the tests launch: Debian's when installed (Playwright cannot download its own on machines
 * without internet), else Playwright's (`npx playwright install chromium`).
 */
import { existsSync } from "node:fs";
import type { LaunchOptions } from "@playwright/test";

const SYSTEM_CHROMIUM = ["/usr/lib/chromium/chromium", "/usr/bin/chromium"].find((path) => existsSync(path));

export const chromiumLaunchOptions: LaunchOptions = SYSTEM_CHROMIUM
  ? {
      executablePath: SYSTEM_CHROMIUM,
      args: [
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-quic",
      ],
    }
  : {};
