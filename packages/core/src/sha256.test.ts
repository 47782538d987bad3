import { describe, expect, it } from "vitest";
import { portableSha256Hex, sha256Hex, sha256HexOfBytes } from "./sha256.js";

async function webCrypto(text: string): Promise<string> {
  const digest = await globalThis.crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((byte) => byte.toString(16).padStart(2, "0")).join("");
}

describe("sha256Hex", () => {
  it("matches the FIPS 180-4 examples", () => {
    expect(sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    expect(sha256Hex("")).toBe("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    expect(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq")).toBe(
      "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1",
    );
  });

  it("agrees with Web Crypto at every padding boundary and on multi-byte UTF-8", async () => {
    const texts = [55, 56, 63, 64, 65, 119, 120, 1000].map((length) => "x".repeat(length));
    texts.push(
      "ünïcödé 🧾 订单",
      JSON.stringify({ items: Array.from({ length: 50 }, (_, i) => ({ sku: `s${i}`, qty: i })) }),
    );
    for (const text of texts) {
      const expected = await webCrypto(text);
      expect(sha256Hex(text)).toBe(expected);
      // The code that browsers and edge runtimes run, where node:crypto is missing.
      expect(portableSha256Hex(new TextEncoder().encode(text))).toBe(expected);
      expect(sha256HexOfBytes(new TextEncoder().encode(text))).toBe(expected);
    }
  });
});
