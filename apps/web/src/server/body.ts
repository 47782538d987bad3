/**
 * A request's body read in full, within bounds, before tRPC sees it. tRPC's fetch adapter reads a body of any size
 * for as long as it takes: a chunked body with no end, or one that stops halfway, would hold the request open (and,
 * at shutdown, the process). Here it is read once into memory, at most `maxBytes`, within `timeoutMs` from the
 * first byte asked for, and given up at once when `stop` aborts.
 */

export interface BodyBounds {
  maxBytes: number;
  timeoutMs: number;
  /** Aborted when the process is shutting down: a body still arriving is given up. */
  stop?: AbortSignal | undefined;
}

export type BodyOutcome =
  /** `request` is the same request with its body in memory, or the request itself when it had none. */
  | { kind: "read"; request: Request }
  | { kind: "too-large" }
  | { kind: "timed-out" }
  /** The body's stream failed: the client went away, or its connection broke mid-body. */
  | { kind: "cut-off" }
  | { kind: "stopped" };

type GivenUp = Exclude<BodyOutcome["kind"], "read" | "too-large">;

/**
 * How long the rest of a body past the limit is still read, and thrown away, before the connection is let go: a
 * client still sending then reads the 413 instead of a reset connection (which can discard the answer unread).
 */
const LINGER_MS = 2_000;

/** Settles with "timed-out" after `ms`, or "stopped" when `stop` aborts; `clear` lets go of both. */
function giveUpAfter(ms: number, stop: AbortSignal | undefined): { givenUp: Promise<GivenUp>; clear(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onStop: (() => void) | undefined;
  const givenUp = new Promise<GivenUp>((resolve) => {
    timer = setTimeout(() => resolve("timed-out"), ms);
    onStop = () => resolve("stopped");
    if (stop?.aborted) onStop();
    else stop?.addEventListener("abort", onStop, { once: true });
  });
  return {
    givenUp,
    clear() {
      clearTimeout(timer);
      if (onStop) stop?.removeEventListener("abort", onStop);
    },
  };
}

/** The next chunk, or why there is none: a failed stream is "cut-off". */
function nextChunk(reader: ReadableStreamDefaultReader<Uint8Array>, givenUp: Promise<GivenUp>) {
  return Promise.race([reader.read(), givenUp]).catch(() => "cut-off" as const);
}

/** Reads what is left of a refused body for LINGER_MS at most (less if `stop` aborts), then cancels it. */
async function discardRest(reader: ReadableStreamDefaultReader<Uint8Array>, stop: AbortSignal | undefined) {
  const { givenUp, clear } = giveUpAfter(LINGER_MS, stop);
  for (let next = await nextChunk(reader, givenUp); typeof next !== "string" && !next.done; ) {
    next = await nextChunk(reader, givenUp);
  }
  clear();
  // Not awaited: a stalled client's stream may never settle its cancellation.
  reader.cancel().catch(() => {});
}

/** Reads `req`'s body within `bounds`; on any outcome but "read" nothing of it is kept. */
export async function readBody(req: Request, { maxBytes, timeoutMs, stop }: BodyBounds): Promise<BodyOutcome> {
  if (!req.body) return { kind: "read", request: req };
  const declared = req.headers.get("content-length");
  const reader = req.body.getReader();
  if (declared !== null && Number(declared) > maxBytes) {
    void discardRest(reader, stop);
    return { kind: "too-large" };
  }

  const { givenUp, clear } = giveUpAfter(timeoutMs, stop);
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const next = await nextChunk(reader, givenUp);
      if (typeof next === "string") {
        reader.cancel().catch(() => {});
        return { kind: next };
      }
      if (next.done) break;
      size += next.value.byteLength;
      if (size > maxBytes) {
        void discardRest(reader, stop);
        return { kind: "too-large" };
      }
      chunks.push(next.value);
    }
  } finally {
    clear();
  }
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return { kind: "read", request: new Request(req, { body }) };
}
