import { afterEach, describe, expect, it, vi } from "vitest";
import { causesSaid, onceLog } from "./operator-detail.js";

/** Drizzle's error for a failed query, in its shape: the query and its parameters in its message and its own fields. */
function drizzleQueryError(cause: Error): Error {
  const params = ["alice", "key-1", '{"card":"4242424242424242"}'];
  return Object.assign(new Error(`Failed query: insert into t values ($1, $2, $3)\nparams: ${params.join(",")}`), {
    name: "DrizzleQueryError",
    query: "insert into t values ($1, $2, $3)",
    params,
    cause,
  });
}

/** postgres.js's error for a statement PostgreSQL refused: the server's message, and its parameters on a field. */
function postgresError(): Error {
  return Object.assign(new Error('relation "idempotency_keys" does not exist'), {
    name: "PostgresError",
    code: "42P01",
    parameters: ["alice", "key-1"],
  });
}

describe("the operator log", () => {
  afterEach(() => vi.restoreAllMocks());

  it("says each cause's name, code and message, and never a query's parameters", () => {
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    onceLog()("idemkit's tables are missing.", drizzleQueryError(postgresError()));
    expect(logged).toHaveBeenCalledTimes(1);
    const [line, ...rest] = logged.mock.calls[0] ?? [];
    expect(rest).toEqual([]);
    expect(line).toBe(
      "idemkit: idemkit's tables are missing.\n" +
        "  caused by DrizzleQueryError (its query and parameters are not logged)\n" +
        '  caused by PostgresError 42P01: relation "idempotency_keys" does not exist',
    );
    expect(line).not.toMatch(/alice|key-1|4242/);
  });

  it("says a value that is not an error as it is", () => {
    expect(causesSaid("socket closed")).toBe("socket closed");
  });
});
