/**
 * The faults, each on a fresh database of one throwaway PostgreSQL server: several instances cold-starting together,
 * the database crashing or shutting down under load with the instances left running, and an instance killed under
 * load. Each returns the figures of one row of `npm run chaos` and what the tests assert on.
 */
import { createDatabase, type RunningPostgres } from "@idemkit/testkit";
import { type Instance, ready, startInstance, startLoad, type Verdict, verdict } from "./harness";

export interface ColdStart {
  /** The database they share. */
  url: string;
  instances: Instance[];
  /** Per instance, ms from its start to ready. */
  readyMs: number[];
}

/** Starts `count` instances at once on an empty database; all must become ready (they migrate in turn). */
export async function coldStart(server: RunningPostgres, count: number): Promise<ColdStart> {
  const { url } = await createDatabase(server.url, "chaos");
  const instances = await Promise.all(
    Array.from({ length: count }, (_, index) => startInstance(`app${index + 1}`, url)),
  );
  const readyMs = await Promise.all(instances.map((instance) => ready(instance)));
  return { url, instances, readyMs };
}

export interface OutageOptions {
  instances: number;
  clients: number;
  /** Load before the fault, in ms. */
  beforeMs: number;
  /** How long the database stays down, in ms. */
  outageMs: number;
  /** Load after the database is back, in ms. */
  afterMs: number;
  /** `crash`: immediate shutdown (recovery from the WAL on start); `halt`: fast shutdown. */
  fault: "crash" | "halt";
}

export interface OutageRow extends Verdict {
  scenario: string;
  outageMs: number;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Places orders through `instances` instances while the database goes down for `outageMs` and comes back; the
 * instances are left running throughout. Recovery is measured from the moment the database accepts connections.
 */
export async function outageUnderLoad(server: RunningPostgres, options: OutageOptions): Promise<OutageRow> {
  const { instances, url } = await coldStart(server, options.instances);
  try {
    const load = startLoad({ instances, clients: options.clients });
    await pause(options.beforeMs);
    await (options.fault === "crash" ? server.crash?.() : server.halt?.());
    await pause(options.outageMs);
    await server.resume?.();
    const resumedAt = load.elapsed();
    await pause(options.afterMs);
    const actions = await load.stop();
    const figures = await verdict(url, actions, instances, resumedAt);
    return {
      scenario: `database ${options.fault}, ${options.instances} instances`,
      outageMs: options.outageMs,
      ...figures,
    };
  } finally {
    for (const instance of instances) instance.kill();
  }
}

export interface KillOptions {
  instances: number;
  clients: number;
  beforeMs: number;
  afterMs: number;
}

/**
 * Kills one instance (SIGKILL) under load and starts a new one in its place: requests it was running are lost
 * with it, their clients retry elsewhere with the same key, and no order is placed twice or lost.
 */
export async function instanceKilled(server: RunningPostgres, options: KillOptions): Promise<OutageRow> {
  const { instances, url } = await coldStart(server, options.instances);
  try {
    const serving = [...instances];
    const load = startLoad({ instances: serving, clients: options.clients });
    await pause(options.beforeMs);
    const victim = instances[0] as Instance;
    victim.kill();
    const killedAt = load.elapsed();
    const replacement = await startInstance(`${victim.name}'`, url);
    instances.push(replacement);
    await ready(replacement);
    // The balancer routes to the new instance once it is ready; the dead one stays in the rotation until then.
    serving.splice(0, 1, replacement);
    await pause(options.afterMs);
    const actions = await load.stop();
    const figures = await verdict(
      url,
      actions,
      instances.filter((instance) => instance !== victim),
      killedAt,
    );
    return { scenario: `instance killed, ${options.instances} instances`, outageMs: 0, ...figures };
  } finally {
    for (const instance of instances) instance.kill();
  }
}
