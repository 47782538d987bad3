/** A procedure's dotted path (`checkout.placeOrder`), from its TanStack mutation key: the name its form keeps its action under. */
export function procedurePath(procedure: { mutationKey(): readonly unknown[] }): string {
  return procedure.mutationKey().flat().join(".");
}
