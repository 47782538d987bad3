import "./provided.js";

export type { ScriptProcess } from "./child.js";
export { announcementsOf, spawnScript } from "./child.js";
export type { CommandOutcome } from "./command-line.js";
export { expectUnreachable, expectUsageError } from "./command-line.js";
export type {
  NodePostgresDatabase,
  OpenedDatabase,
  PgliteDatabase,
  PostgresDatabase,
  PostgresOpenOptions,
} from "./databases.js";
export {
  connectNodePostgres,
  connectPostgres,
  MIGRATIONS_FOLDER,
  migrationStatementsFor,
  openNodePostgres,
  openPglite,
  openPostgres,
} from "./databases.js";
export type { RunningDynamo } from "./dynalite.js";
export { startDynamo } from "./dynalite.js";
export type { EndingConnections } from "./ending-connections.js";
export { endingConnections } from "./ending-connections.js";
export type { Fault, FaultProxy, ProxiedRequest } from "./fault-proxy.js";
export { startFaultProxy } from "./fault-proxy.js";
export { gate } from "./gate.js";
export type { FetchHandler, ServedHandler } from "./http.js";
export { serveFetch } from "./http.js";
export type { LatencyProxy } from "./latency-proxy.js";
export { startLatencyProxy } from "./latency-proxy.js";
export type { ModelSubject } from "./model.js";
export { describeContractModel } from "./model.js";
export type { Driver, NotesDatabase } from "./notes-databases.js";
export { notesDatabases } from "./notes-databases.js";
export type { RunningPgbouncer, StartPgbouncerOptions } from "./pgbouncer.js";
export { startPgbouncer } from "./pgbouncer.js";
export type { PooledDatabase, PooledDriver } from "./pooled.js";
export { openPooled } from "./pooled.js";
export type { RunningPostgres, StartPostgresOptions } from "./postgres.js";
export { createDatabase, freePort, startPostgres } from "./postgres.js";
export type { RunningRedis, RunningRedisCluster, StartRedisOptions } from "./redis.js";
export { startRedis, startRedisCluster } from "./redis.js";
export { shellLines } from "./shell-lines.js";
