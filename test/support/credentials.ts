// Credentials Secrets as users write them: labelled as platform credentials
// (the operator reads no other Secret as a key), the key in stringData, applied
// over stdin so the key is never on a command line, and server-side, so that no
// kubectl last-applied annotation copies the key into the Secret's metadata.
import { credentialsSecretLabels } from "../../src/controllers/managed/credentials.ts";
import { kubectl } from "./kube.ts";

export interface CredentialsSecret {
  apiVersion: "v1";
  kind: "Secret";
  metadata: { name: string; namespace?: string; labels: Record<string, string> };
  stringData: Record<string, string>;
}

/** The Secret `name` holding `apiKey` under `key` (default `apiKey`), labelled as credentials. */
export function credentialsSecretManifest(
  name: string,
  apiKey: string,
  options: { namespace?: string; key?: string } = {},
): CredentialsSecret {
  return {
    apiVersion: "v1",
    kind: "Secret",
    metadata: {
      name,
      ...(options.namespace ? { namespace: options.namespace } : {}),
      labels: { ...credentialsSecretLabels },
    },
    stringData: { [options.key ?? "apiKey"]: apiKey },
  };
}

/** Applies that Secret in `namespace` (as the admin, or with `kubeconfig`). */
export async function applyCredentialsSecret(
  namespace: string,
  name: string,
  apiKey: string,
  options: { key?: string; kubeconfig?: string } = {},
): Promise<void> {
  await kubectl(["apply", "--server-side", "-n", namespace, "-f", "-"], {
    input: JSON.stringify(credentialsSecretManifest(name, apiKey, { key: options.key })),
    ...(options.kubeconfig ? { kubeconfig: options.kubeconfig } : {}),
  });
}
