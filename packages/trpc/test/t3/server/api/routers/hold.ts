/**
 * Test hook, not part of the T3 shape: lets a test stop `post.create` after its insert, in this process through
 * `gates`, or forever with T3_HOLD_FOREVER=1 in a child process that the test kills.
 */
export interface Gate {
  /** Called when a request reaches the gate. */
  reached(): void;
  /** The request goes on when this settles. */
  opened: Promise<void>;
}

export const gates = new Map<string, Gate>();

export async function hold(name: string): Promise<void> {
  if (process.env.T3_HOLD_FOREVER === "1" && name.startsWith("hold")) {
    console.log(`HOLDING ${name}`);
    await new Promise<never>(() => {});
  }
  const gate = gates.get(name);
  if (!gate) return;
  gate.reached();
  await gate.opened;
}
