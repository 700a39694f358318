// The certificate /metrics serves when none is mounted: Node's own X.509 parser and a TLS
// client accept it for the names it was made for.
import { X509Certificate, createPrivateKey } from "node:crypto";
import { createServer } from "node:https";
import type { AddressInfo } from "node:net";
import { connect } from "node:tls";
import { describe, expect, it } from "vitest";
import { selfSignedCertificate } from "./self-signed.ts";

describe("selfSignedCertificate", () => {
  it("is a valid certificate for its hosts, signed by its own key", () => {
    const now = new Date("2026-11-23T03:00:00Z");
    const { cert, key } = selfSignedCertificate(["neon-cloud-operator-metrics", "localhost"], 365, now);
    const x509 = new X509Certificate(cert);
    expect(x509.subjectAltName).toBe("DNS:neon-cloud-operator-metrics, DNS:localhost");
    expect(x509.subject).toBe("CN=neon-cloud-operator-metrics");
    expect(x509.checkHost("localhost")).toBe("localhost");
    expect(x509.verify(x509.publicKey)).toBe(true);
    expect(x509.checkPrivateKey(createPrivateKey(key))).toBe(true);
    expect(new Date(x509.validFrom).getTime()).toBeLessThan(now.getTime());
    expect(new Date(x509.validTo).getTime()).toBe(now.getTime() + 365 * 86_400_000);
  });

  it("serves TLS that a client trusting it verifies", async () => {
    const { cert, key } = selfSignedCertificate(["localhost"]);
    const server = createServer({ cert, key }, (_req, res) => res.end("ok"));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as AddressInfo;
    const authorized = await new Promise<boolean>((resolve, reject) => {
      const socket = connect({ host: "127.0.0.1", port, servername: "localhost", ca: cert }, () => {
        resolve(socket.authorized);
        socket.end();
      });
      socket.on("error", reject);
    });
    server.close();
    expect(authorized).toBe(true);
  });
});
