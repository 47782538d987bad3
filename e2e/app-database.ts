/**
 * The tests' own connection to a scaffolded app's database (the T3 app's, the new Next.js app's), where they count
 * what each action wrote. Opened when first used and closed by each spec file after its tests: the spec files one
 * worker runs share it, so a file that closed it leaves the next to open it again.
 */
import postgres from "postgres";

/** The connection to the database `npm run e2e` names in the environment variable `variable`. */
export function appDatabase(variable: string): { sql: () => postgres.Sql; close: () => Promise<void> } {
  const url = process.env[variable];
  if (!url) throw new Error(`${variable} is not set: run the scaffolded apps' tests through \`npm run e2e\`.`);
  let open: postgres.Sql | undefined;
  return {
    sql: () => (open ??= postgres(url, { max: 2, onnotice: () => {} })),
    async close() {
      const closing = open;
      open = undefined;
      await closing?.end();
    },
  };
}
