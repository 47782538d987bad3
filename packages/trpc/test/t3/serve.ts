/**
 * The T3 fixture's route handler in a process of its own, for the crash test: serves on a free port and prints
 * `LISTENING <url>`; with T3_HOLD_FOREVER=1, post.create for a name starting with "hold" stops after its insert.
 */
import { serveFetch } from "@idemkit/testkit";
import { POST } from "./app/api/trpc/[trpc]/route.js";

const server = await serveFetch(POST);
console.log(`LISTENING ${server.url}`);
