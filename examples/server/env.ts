/** The app's settings, read once at start: a missing one fails the process then, not a request later. */
function required(name: string): string {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set.`);
  return value;
}

export const env = {
  databaseUrl: required("DATABASE_URL"),
  redisUrl: process.env.REDIS_URL ?? "redis://127.0.0.1:6379",
  idempotencyTable: process.env.IDEMPOTENCY_TABLE ?? "idempotency",
};

/** The keys stored answers are sealed with (`sealed-store.ts`), read only where they are used. */
export const answerKeys = () => ({
  current: required("IDEMKIT_ANSWER_KEY"),
  previous: required("IDEMKIT_PREVIOUS_ANSWER_KEY"),
});
