import type { NextConfig } from "next";

const config: NextConfig = {
  // PGlite loads its WebAssembly and data files from its own package folder at run time: keep it unbundled.
  serverExternalPackages: ["@electric-sql/pglite"],
  // `npm test` typechecks every workspace with tsc already; the build need not do it a second time.
  typescript: { ignoreBuildErrors: true },
  poweredByHeader: false,
  // The default of the app router, said out loud: the checkout's hooks must behave with effects run twice.
  reactStrictMode: true,
};

export default config;
