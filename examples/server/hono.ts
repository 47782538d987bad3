// #region hono
import { Hono } from "hono";
import { POST } from "./route-handler";

// Hono holds the Fetch Request as c.req.raw: the same protected handler answers it.
export const app = new Hono();
app.post("/api/orders", (c) => POST(c.req.raw));
// #endregion hono
