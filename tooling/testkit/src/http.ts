/**
 * Serves a Fetch handler (`(Request) => Promise<Response>`, as tRPC's fetch adapter is) from node:http on
 * 127.0.0.1, so tests and benchmarks go through real sockets and real HTTP parsing.
 */
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { incomingMessageToRequest } from "@trpc/server/adapters/node-http";

export interface ServedHandler {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  url: string;
  close(): Promise<void>;
}

export type FetchHandler = (request: Request) => Promise<Response>;

/** Starts a server on `port` (0 picks a free one) that hands every request to `handler`. */
export function serveFetch(handler: FetchHandler, port = 0): Promise<ServedHandler> {
  const server = createServer((req, res) => {
    respond(handler, req, res).catch((error: unknown) => {
      res.statusCode = 500;
      res.end(String(error));
    });
  });
  server.keepAliveTimeout = 30_000;
  return new Promise((resolve) => {
    server.listen(port, "127.0.0.1", () => {
      const { port: bound } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${bound}`,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

async function respond(handler: FetchHandler, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const response = await handler(incomingMessageToRequest(req, res, { maxBodySize: 1_000_000 }));
  res.statusCode = response.status;
  response.headers.forEach((value, name) => {
    res.appendHeader(name, value);
  });
  res.end(Buffer.from(await response.arrayBuffer()));
}
