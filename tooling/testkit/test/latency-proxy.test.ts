/**
 * The latency proxy the bench puts before PostgreSQL: what goes through arrives whole and in order both ways, many
 * chunks in flight at once, and an end on one side ends the other only after what it sent.
 */
import { once } from "node:events";
import { type AddressInfo, connect, createServer } from "node:net";
import { afterAll, expect, it } from "vitest";
import { startLatencyProxy } from "../src/latency-proxy.js";

const echo = createServer({ allowHalfOpen: true }, (socket) => socket.pipe(socket));
await new Promise<void>((resolve) => echo.listen(0, "127.0.0.1", resolve));
afterAll(() => new Promise<void>((resolve) => echo.close(() => resolve())));

it("carries every chunk both ways in order, and passes an end on after them", async () => {
  const { port } = echo.address() as AddressInfo;
  const proxy = await startLatencyProxy({ host: "127.0.0.1", port }, 3);
  const client = connect({ host: "127.0.0.1", port: proxy.port });
  await once(client, "connect");
  const received: Buffer[] = [];
  client.on("data", (chunk: Buffer) => received.push(chunk));
  const sent: string[] = [];
  for (let n = 0; n < 200; n++) {
    const message = `message ${n};`;
    sent.push(message);
    client.write(message);
  }
  client.end();
  await once(client, "end");
  expect(Buffer.concat(received).toString()).toBe(sent.join(""));
  await proxy.close();
});
