/** A promise the test opens by hand: a moment a procedure waits for, or one it signals when it reaches it. */
export function gate(): { opened: Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}
