/**
 * A real HTTP proxy between a client and a server that can misbehave on cue, the way networks and load balancers
 * do: lose the response after the server committed, answer 503 without reaching the server, cut the connection
 * before the request arrives. Client tests go through it so that retries meet real sockets, not a mocked fetch.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export type Fault =
  /** Forward the request, let the server answer in full, then cut the client's connection: the answer is lost. */
  | { kind: "drop-response" }
  /**
   * Forward the request, then send the client the server's status and headers and half its body, and cut the
   * connection: the answer began (a 200, say) but never arrived whole.
   */
  | { kind: "cut-body" }
  /** Answer this instead of forwarding (a load balancer's 503, a 429). The server never sees the request. */
  | { kind: "answer"; status: number; headers?: Record<string, string>; body?: string }
  /** Cut the connection before forwarding: the server never sees the request. */
  | { kind: "reset" }
  /** Forward after a pause, so a test can act while the request is on its way. */
  | { kind: "delay"; ms: number };

/** One request that reached the proxy, with what the proxy did with it. */
export interface ProxiedRequest {
  method: string;
  path: string;
  idempotencyKey: string | undefined;
  fault: Fault["kind"] | "none";
}

export interface FaultProxy {
  /** Base URL of the proxy, e.g. `http://127.0.0.1:41235`. */
  url: string;
  /** Applies these faults, in order, to the next POST requests (mutations); other requests pass through. */
  inject(...faults: Fault[]): void;
  /** Every request seen so far, in arrival order. */
  requests: ProxiedRequest[];
  close(): Promise<void>;
}

const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "host", "content-length"]);

/** Starts a proxy on 127.0.0.1 forwarding to `targetUrl` (e.g. the URL from `serveFetch`). */
export function startFaultProxy(targetUrl: string): Promise<FaultProxy> {
  const pending: Fault[] = [];
  const requests: ProxiedRequest[] = [];
  const server = createServer((req, res) => {
    const fault = req.method === "POST" ? pending.shift() : undefined;
    const key = req.headers["idempotency-key"];
    requests.push({
      method: req.method ?? "GET",
      path: req.url ?? "/",
      idempotencyKey: typeof key === "string" ? key : undefined,
      fault: fault?.kind ?? "none",
    });
    handle(req, res, fault).catch(() => res.destroy());
  });

  async function handle(req: IncomingMessage, res: ServerResponse, fault: Fault | undefined): Promise<void> {
    const body = await readBody(req);
    if (fault?.kind === "reset") {
      res.destroy();
      return;
    }
    if (fault?.kind === "answer") {
      res.writeHead(fault.status, { "content-type": "text/plain", ...fault.headers });
      res.end(fault.body ?? "");
      return;
    }
    if (fault?.kind === "delay") await new Promise((done) => setTimeout(done, fault.ms));
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined || HOP_BY_HOP.has(name)) continue;
      for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
    }
    const init: RequestInit = { method: req.method ?? "GET", headers };
    if (body.length > 0) init.body = new Uint8Array(body);
    const upstream = await fetch(new URL(req.url ?? "/", targetUrl), init);
    const payload = Buffer.from(await upstream.arrayBuffer());
    if (fault?.kind === "drop-response") {
      res.destroy();
      return;
    }
    upstream.headers.forEach((value, name) => {
      if (!HOP_BY_HOP.has(name) && name !== "content-encoding") res.appendHeader(name, value);
    });
    if (fault?.kind === "cut-body") {
      res.writeHead(upstream.status, { "content-length": String(payload.length) });
      res.write(payload.subarray(0, Math.floor(payload.length / 2)), () => res.destroy());
      return;
    }
    res.writeHead(upstream.status);
    res.end(payload);
  }

  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}`,
        inject: (...faults) => {
          pending.push(...faults);
        },
        requests,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}
