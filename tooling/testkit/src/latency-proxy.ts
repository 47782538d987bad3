/**
 * A TCP proxy that puts a network between a client and a database on this machine: every chunk is held for half the
 * round trip each way, in order, as a link to a database in another zone holds it. Both of its sockets set
 * `noDelay` (a router does no Nagle): without it, the proxy's own writes would wait on delayed ACKs and add stalls of
 * 40 ms that no real network has. The round trip can be changed while connections are open.
 *
 * It also counts flights: what a client sends on a connection before an answer reaches it is one flight, however many
 * statements and writes it holds. A client that waits for each answer before it sends the next statement spends a
 * flight (a round trip) on each; one that pipelines them, one in all. With a round trip of a few ms, a client's
 * writes of one moment are never split by an answer, as they could be on a bare local socket.
 *
 * It listens on the database's own port, on another loopback address (127.0.0.2), as a network in between leaves the
 * port a client connects to: idemkit proves a connection reaches PostgreSQL itself by the port the server says it
 * was reached on (a pooler listens on its own), and a proxy on another port would read as a pooler. Where that
 * address or port cannot be had (not Linux; a server listening on every address), it listens on a port of its own,
 * and says so (`transparent` false).
 */
import { connect, createServer, type Socket } from "node:net";

export interface LatencyProxy {
  /** The address and port it listens on. */
  host: string;
  port: number;
  /** Whether it listens on the database's own port (see the file's comment). */
  transparent: boolean;
  /** The database URL `url` with its host and port replaced by the proxy's. */
  urlFor(url: string): string;
  /** Sets the round trip added from now on, in ms (0 for none). */
  setRoundTripMs(ms: number): void;
  /** How many flights clients sent through it so far, on all their connections (see the file's comment). */
  flights(): number;
  close(): Promise<void>;
}

/** Starts a proxy to `host:port` adding `roundTripMs` to every round trip. */
export async function startLatencyProxy(
  target: { host: string; port: number },
  roundTripMs = 0,
): Promise<LatencyProxy> {
  let toServerMs = 0;
  let toClientMs = 0;
  const setRoundTripMs = (ms: number) => {
    // Timers have whole milliseconds: an odd round trip puts the extra one on the answer's way back.
    toServerMs = Math.floor(ms / 2);
    toClientMs = ms - toServerMs;
  };
  setRoundTripMs(roundTripMs);
  const sockets = new Set<Socket>();
  let flights = 0;

  /**
   * Forwards `from` to `to`, each chunk `delayMs()` after it arrived, through one queue: a chunk never overtakes
   * the one before it, also when the round trip shrinks in between, and the end comes after the last chunk.
   */
  function relay(from: Socket, to: Socket, delayMs: () => number, delivered: () => void = () => {}): void {
    const queue: Array<{ due: number; chunk: Buffer | null }> = [];
    let timer: NodeJS.Timeout | undefined;
    const pump = () => {
      timer = undefined;
      while (queue.length > 0 && (queue[0]?.due ?? 0) <= performance.now()) {
        const { chunk } = queue.shift() as { chunk: Buffer | null };
        if (!to.writable) continue;
        if (chunk) {
          to.write(chunk);
          delivered();
        } else to.end();
      }
      const next = queue[0];
      if (next) timer = setTimeout(pump, Math.max(0, next.due - performance.now()));
    };
    const forward = (chunk: Buffer | null) => {
      queue.push({ due: performance.now() + delayMs(), chunk });
      if (!timer) pump();
    };
    from.on("data", (chunk: Buffer) => forward(chunk));
    from.on("end", () => forward(null));
    from.on("error", () => to.destroy());
    // What arrived before `from` closed is still on its way: the queue runs on until `to` is gone.
    from.on("close", () => sockets.delete(from));
  }

  const server = createServer({ noDelay: true, allowHalfOpen: true }, (client) => {
    const upstream = connect({ host: target.host, port: target.port, noDelay: true, allowHalfOpen: true });
    for (const socket of [client, upstream]) sockets.add(socket);
    // A flight begins with the client's first data after an answer reached it (or ever, on this connection).
    let answered = true;
    client.on("data", () => {
      if (answered) flights++;
      answered = false;
    });
    relay(client, upstream, () => toServerMs);
    relay(
      upstream,
      client,
      () => toClientMs,
      () => {
        answered = true;
      },
    );
  });

  const listening = (host: string, port: number) =>
    new Promise<number>((resolve, reject) => {
      server.once("error", reject);
      server.listen(port, host, () => {
        server.off("error", reject);
        const address = server.address();
        resolve(typeof address === "object" && address ? address.port : 0);
      });
    });
  const transparentHost = "127.0.0.2";
  const bound = await listening(transparentHost, target.port).then(
    (port) => ({ host: transparentHost, port, transparent: true }),
    async () => ({ host: "127.0.0.1", port: await listening("127.0.0.1", 0), transparent: false }),
  );
  return {
    ...bound,
    urlFor(url) {
      const proxied = new URL(url);
      proxied.hostname = bound.host;
      proxied.port = String(bound.port);
      return proxied.toString();
    },
    setRoundTripMs,
    flights: () => flights,
    close: () =>
      new Promise<void>((done) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => done());
      }),
  };
}
