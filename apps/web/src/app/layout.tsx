import type { Metadata } from "next";
import type { ReactNode } from "react";
import { Providers } from "@/client/trpc";
import "./globals.css";

export const metadata: Metadata = {
  title: "idemkit checkout",
  description: "Press Place order as often as you like: the order is placed once.",
};

export default function RootLayout({ children }: { children: ReactNode }) {
  return (
    <html lang="en">
      <body>
        <Providers>{children}</Providers>
      </body>
    </html>
  );
}
