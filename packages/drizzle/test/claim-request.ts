import type { ClaimRequest } from "@idemkit/core/store";

/** A claim of `key` in the tests' scope and path, its lease and record running from `now`. */
export function claimFor(key: string, now = Date.now()): ClaimRequest {
  return {
    id: { scope: "s", path: "notes.add", key },
    fingerprint: "fp",
    now,
    leaseExpiresAt: now + 30_000,
    expiresAt: now + 60_000,
  };
}
