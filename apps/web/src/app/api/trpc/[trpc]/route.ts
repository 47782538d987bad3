import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { database } from "@/server/database";
import { type AppRouter, createRouter } from "@/server/router";
import { userFromCookies } from "@/server/user";

let router: Promise<AppRouter> | undefined;

async function handler(req: Request): Promise<Response> {
  try {
    router ??= database().then(({ db }) => createRouter(db));
    const appRouter = await router;
    return await fetchRequestHandler({
      endpoint: "/api/trpc",
      req,
      router: appRouter,
      createContext: ({ req: request, resHeaders }) => ({
        req: request,
        resHeaders,
        userId: userFromCookies(request.headers.get("cookie")),
      }),
    });
  } catch (error) {
    router = undefined;
    // The database could not be opened: nothing ran, and the client's retry may find it back.
    console.error("checkout API unavailable:", error);
    return Response.json({ error: "The database is unavailable." }, { status: 503, headers: { "retry-after": "1" } });
  }
}

export { handler as GET, handler as POST };
