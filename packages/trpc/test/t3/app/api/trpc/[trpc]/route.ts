import { fetchRequestHandler } from "@trpc/server/adapters/fetch";
import { appRouter } from "../../../../server/api/root.js";
import { createTRPCContext } from "../../../../server/api/trpc.js";

const createContext = async (req: Request) => {
  return createTRPCContext({
    headers: req.headers,
  });
};

const handler = (req: Request) =>
  fetchRequestHandler({
    endpoint: "/api/trpc",
    req,
    router: appRouter,
    createContext: ({ resHeaders, info }) => createContext(req).then((ctx) => ({ ...ctx, resHeaders, info })), // idemkit
  });

export { handler as GET, handler as POST };
