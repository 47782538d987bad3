/**
 * What the Fetch adapter reads of a request before anything runs: its body, once, bounded in size and time (a body
 * refused is drained a little, so its client reads the answer rather than a reset), and the fingerprint that tells
 * two requests with one key apart.
 */
import { MAX_TIMER_MS } from "./deadline.js";
import { IdempotencyError, IdempotencyErrorCode } from "./errors.js";
import { fingerprint, fingerprintAsync } from "./fingerprint.js";
import { isLimited } from "./numeric-options.js";

/**
 * What tells two requests with one key apart: the method, the path and query, the media type and the body. JSON
 * and other bodies are compared byte for byte; a multipart form by its fields and files, as its boundary is drawn
 * anew each time a client sends it.
 */
export async function fingerprintOf(request: Request, body: Uint8Array<ArrayBuffer>): Promise<string> {
  const mediaType = (request.headers.get("content-type") ?? "").split(";")[0]?.trim().toLowerCase() ?? "";
  const identity = { method: request.method, url: pathAndQuery(request.url), mediaType };
  if (mediaType === "multipart/form-data") {
    const form = await rebuilt(request, body)
      .formData()
      .catch((cause: unknown) => {
        throw new IdempotencyError(
          IdempotencyErrorCode.BODY_INVALID,
          "The request's body is not the multipart form its Content-Type says; nothing ran. Send a well-formed one.",
          { cause },
        );
      });
    return fingerprintAsync({ ...identity, fields: [...form.entries()] });
  }
  return fingerprint({ ...identity, body: await sha256Bytes(body) });
}

/** The request's body, read once within `maxBytes` and `timeoutMs`; refused before anything runs otherwise. */
export async function boundedBody(
  request: Request,
  maxBytes: number,
  timeoutMs: number,
): Promise<Uint8Array<ArrayBuffer>> {
  const declared = Number(request.headers.get("content-length") ?? Number.NaN);
  if (declared > maxBytes) throw tooLarge(maxBytes);
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<never>((_, reject) => {
    // Infinity is no limit: setTimeout would fire at once for it.
    if (!isLimited(timeoutMs)) return;
    timer = setTimeout(
      () => {
        reject(
          new IdempotencyError(
            IdempotencyErrorCode.BODY_TIMEOUT,
            `The request's body did not arrive within ${timeoutMs} ms; nothing ran. Send it again with the same key.`,
          ),
        );
      },
      Math.min(timeoutMs, MAX_TIMER_MS),
    );
  });
  try {
    for (;;) {
      const { done, value } = await Promise.race([reader.read(), timedOut]);
      if (done) break;
      size += value.byteLength;
      if (size > maxBytes) {
        await discardRest(reader);
        throw tooLarge(maxBytes);
      }
      chunks.push(value);
    }
  } catch (error) {
    reader.cancel().catch(() => {});
    throw error;
  } finally {
    clearTimeout(timer);
  }
  const body = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    body.set(chunk, offset);
    offset += chunk.byteLength;
  }
  return body;
}

/** How long the rest of a refused body is read and dropped, so that its client reads the 413 rather than a reset. */
const DISCARD_MS = 2_000;

/** Reads and drops what is left of a body, for `DISCARD_MS` at most. */
export async function discardRest(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const enough = new Promise<{ done: true }>((resolve) => {
    timer = setTimeout(() => resolve({ done: true }), DISCARD_MS);
  });
  try {
    for (;;) {
      const { done } = await Promise.race([reader.read(), enough]);
      if (done) return;
    }
  } catch {
    // A body that fails while it is dropped changes nothing: it is refused all the same.
  } finally {
    clearTimeout(timer);
  }
}

function tooLarge(maxBytes: number): IdempotencyError {
  return new IdempotencyError(
    IdempotencyErrorCode.BODY_TOO_LARGE,
    `The request's body is larger than ${maxBytes} bytes; nothing ran.`,
  );
}

/** The request again, with the body already read, for the handler to read as usual. */
export function rebuilt(request: Request, body: Uint8Array<ArrayBuffer>): Request {
  return new Request(request.url, {
    method: request.method,
    headers: request.headers,
    ...(body.byteLength > 0 && { body }),
    signal: request.signal,
  });
}

function pathAndQuery(url: string): string {
  const { pathname, search } = new URL(url);
  return pathname + search;
}

async function sha256Bytes(bytes: Uint8Array<ArrayBuffer>): Promise<string> {
  const digest = new Uint8Array(await globalThis.crypto.subtle.digest("SHA-256", bytes));
  return Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join("");
}
