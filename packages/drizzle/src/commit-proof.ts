/**
 * How a COMMIT is proved where the driver may report one done that PostgreSQL did not keep (see
 * `Transactions.commitProof`): by the transaction's last statement, sent in the COMMIT's flight, which carries the
 * proof as one more column of its rows; and where that says "not proved", by reading back what the COMMIT kept.
 */
import type { Row } from "./database.js";
import type { Driver } from "./driver.js";
import { againIfConnectionLost } from "./driver-errors.js";
import { named, type Statement } from "./statement-text.js";

/** What stands for the proof where none can hold (a connection not proved to reach PostgreSQL itself). */
const NEVER_PROVED = "false";

const proving = new WeakMap<Statement, Map<string, Statement>>();

/**
 * `statement` as the transaction's last, before its COMMIT: with the driver's proof evaluated after it, in its
 * transaction, as one more column of its rows (`commit_proved`); `statement` itself where the driver's COMMITs need
 * none. A session behind a transaction pooler is shared, so what it holds proves nothing there.
 */
export function provingCommit(statement: Statement, { commitProof, pooler }: Driver): Statement {
  if (commitProof === undefined) return statement;
  const proof = pooler.provedDirect() ? commitProof : NEVER_PROVED;
  let byProof = proving.get(statement);
  if (!byProof) {
    byProof = new Map();
    proving.set(statement, byProof);
  }
  let made = byProof.get(proof);
  if (!made) {
    made = named({
      made: {
        name: "idemkit_proving",
        steps: { ...statement.steps, proved: statement.text },
        text: `select *, ${proof} as commit_proved from proved`,
        columns: [...statement.columns, "commit_proved"],
      },
    }).made;
    byProof.set(proof, made);
  }
  return made;
}

/**
 * Resolves once the COMMIT after `row`'s statement (sent through `provingCommit`) is known to have been kept: the
 * driver's COMMITs need no proof, or the proof held, or `readBack` (sent again on another connection when its own
 * was lost) finds what the transaction wrote. Rejects with the driver's answer to a COMMIT that kept nothing, which
 * `detail` describes.
 */
export async function commitKept(
  { commitProof, pooler }: Driver,
  row: Row | undefined,
  readBack: () => Promise<Row[]>,
  detail: string,
): Promise<void> {
  if (commitProof === undefined || row?.commit_proved === true) return;
  if ((await againIfConnectionLost(readBack)).length > 0) return;
  throw pooler.unkeptCommit(detail);
}
