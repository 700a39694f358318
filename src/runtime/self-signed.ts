// A self-signed serving certificate made at start, for /metrics over HTTPS when no certificate
// is mounted (as controller-runtime's metrics server does). Scrapers skip verification or pin it;
// what protects the metrics is the bearer token each scrape must carry, not the certificate.
// Node can make keys and signatures but not certificates, and the one X.509 library that would
// needs a global reflect polyfill, so this writes the few DER structures of one certificate.
import { generateKeyPairSync, randomBytes, sign } from "node:crypto";

export interface ServingCertificate {
  /** PEM certificate. */
  cert: string;
  /** PEM PKCS#8 private key. */
  key: string;
}

/** DER length octets. */
function length(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v % 256);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

const der = (tag: number, ...content: Buffer[]): Buffer => {
  const body = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), length(body.length), body]);
};
const sequence = (...content: Buffer[]) => der(0x30, ...content);

function oid(dotted: string): Buffer {
  const [a = 0, b = 0, ...rest] = dotted.split(".").map(Number);
  const bytes = [a * 40 + b];
  for (const arc of rest) {
    const chunk: number[] = [];
    for (let v = arc; ; v = Math.floor(v / 128)) {
      chunk.unshift((v % 128) | (chunk.length ? 0x80 : 0));
      if (v < 128) break;
    }
    bytes.push(...chunk);
  }
  return der(0x06, Buffer.from(bytes));
}

/** A positive INTEGER from big-endian bytes. */
const integer = (bytes: Buffer) =>
  der(0x02, bytes[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);

/** UTCTime (years before 2050) or GeneralizedTime, as RFC 5280 asks. */
function time(at: Date): Buffer {
  const iso = at.toISOString().replace(/[-:T]/g, "").slice(0, 14); // YYYYMMDDHHMMSS
  return at.getUTCFullYear() < 2050
    ? der(0x17, Buffer.from(`${iso.slice(2)}Z`, "ascii"))
    : der(0x18, Buffer.from(`${iso}Z`, "ascii"));
}

const commonName = (cn: string) => sequence(der(0x31, sequence(oid("2.5.4.3"), der(0x0c, Buffer.from(cn)))));
const ecdsaWithSha256 = sequence(oid("1.2.840.10045.4.3.2"));

/**
 * An ECDSA P-256 certificate for `hosts` (DNS names in its subjectAltName), valid from an hour
 * ago (clock skew) for `days`, signed by its own key.
 */
export function selfSignedCertificate(
  hosts: readonly string[],
  days = 365,
  now = new Date(),
): ServingCertificate {
  const { privateKey, publicKey } = generateKeyPairSync("ec", { namedCurve: "P-256" });
  const name = commonName(hosts[0] ?? "localhost");
  const subjectAltName = sequence(...hosts.map((h) => der(0x82, Buffer.from(h, "ascii"))));
  const extensions = der(
    0xa3,
    sequence(
      sequence(oid("2.5.29.17"), der(0x04, subjectAltName)),
      // keyUsage: digitalSignature, critical.
      sequence(
        oid("2.5.29.15"),
        der(0x01, Buffer.from([0xff])),
        der(0x04, der(0x03, Buffer.from([0x07, 0x80]))),
      ),
      // extKeyUsage: serverAuth.
      sequence(oid("2.5.29.37"), der(0x04, sequence(oid("1.3.6.1.5.5.7.3.1")))),
    ),
  );
  const serial = randomBytes(16);
  serial[0] = serial[0]! & 0x7f;
  const tbs = sequence(
    der(0xa0, integer(Buffer.from([2]))), // version 3
    integer(serial),
    ecdsaWithSha256,
    name,
    sequence(time(new Date(now.getTime() - 3_600_000)), time(new Date(now.getTime() + days * 86_400_000))),
    name,
    publicKey.export({ type: "spki", format: "der" }),
    extensions,
  );
  const signature = sign("sha256", tbs, { key: privateKey, dsaEncoding: "der" });
  const certificate = sequence(tbs, ecdsaWithSha256, der(0x03, Buffer.from([0]), signature));
  const lines = certificate.toString("base64").match(/.{1,64}/g) ?? [];
  return {
    cert: `-----BEGIN CERTIFICATE-----\n${lines.join("\n")}\n-----END CERTIFICATE-----\n`,
    key: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
  };
}
