/** Raw HTTP calls to the fixture app, so tests see the real status codes, headers and bodies. */
import superjson from "superjson";

export interface CallOptions {
  key?: string | null;
  user?: string;
  headers?: Record<string, string>;
}

export interface Answer {
  status: number;
  headers: Headers;
  text: string;
  /** The deserialized result (superjson), when the call succeeded. */
  data?: unknown;
  /** The error shape, when it failed. */
  error?: { message: string; code: number; data: { code: string; httpStatus: number; idempotency: unknown } };
}

export async function mutate(
  baseUrl: string,
  path: string,
  input: unknown,
  options: CallOptions = {},
): Promise<Answer> {
  const { key = globalThis.crypto.randomUUID(), user = "alice", headers = {} } = options;
  const response = await fetch(`${baseUrl}/trpc/${path}`, {
    method: "POST",
    headers: {
      "content-type": "application/json",
      "x-user": user,
      ...(key === null ? {} : { "idempotency-key": key }),
      ...headers,
    },
    body: JSON.stringify(superjson.serialize(input)),
  });
  return parse(response);
}

export async function query(
  baseUrl: string,
  path: string,
  options: CallOptions & { input?: unknown } = {},
): Promise<Answer> {
  const search =
    options.input === undefined
      ? ""
      : `?input=${encodeURIComponent(JSON.stringify(superjson.serialize(options.input)))}`;
  const response = await fetch(`${baseUrl}/trpc/${path}${search}`, { headers: { "x-user": options.user ?? "alice" } });
  return parse(response);
}

async function parse(response: Response): Promise<Answer> {
  const text = await response.text();
  const body = JSON.parse(text);
  const answer: Answer = { status: response.status, headers: response.headers, text };
  if (body.result) answer.data = superjson.deserialize(body.result.data);
  if (body.error) answer.error = superjson.deserialize(body.error);
  return answer;
}
