/** Opens and migrates the database when the server starts, so the first visitor does not wait for it. */
export async function register(): Promise<void> {
  if (process.env.NEXT_RUNTIME !== "nodejs") return;
  const { database } = await import("./server/database");
  const { description } = await database();
  console.log(`checkout database: ${description}`);
}
