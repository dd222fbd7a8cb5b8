// A real OAuth 2.1 identity provider for kbkit's tests: node-oidc-provider on 127.0.0.1, a port the
// system picks, issuing JWT access tokens (RS256) by client credentials for any loopback resource
// (RFC 8707 resource indicators). It prints one JSON line, {"issuer": ...}, once it listens, and
// runs until it is signalled.
//
// Clients: "eng-agent" (groups ["eng"], may ask kb and kb.memory) and "sales-agent" (groups
// ["sales"]), both with the secret "secret-of-" + their id; "no-scope-agent" asks no scope.
import { createServer } from "node:http";
import { generateKeyPairSync } from "node:crypto";
import Provider from "oidc-provider";

const GROUPS = { "eng-agent": ["eng"], "sales-agent": ["sales"], "no-scope-agent": ["eng"] };
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: "jwk" }), kid: "test-key-1", use: "sig", alg: "RS256" };

const server = createServer();
server.listen(0, "127.0.0.1", () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: Object.keys(GROUPS).map((id) => ({
      client_id: id,
      client_secret: `secret-of-${id}`,
      grant_types: ["client_credentials"],
      redirect_uris: [],
      response_types: [],
      token_endpoint_auth_method: "client_secret_basic",
      scope: id === "no-scope-agent" ? "other" : "kb kb.memory",
    })),
    jwks: { keys: [jwk] },
    scopes: ["kb", "kb.memory", "other"],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resource) => {
          if (!resource.startsWith("http://127.0.0.1:")) throw new Error("not a loopback resource");
          return { scope: "kb kb.memory other", audience: resource, accessTokenFormat: "jwt", jwt: { sign: { alg: "RS256" } } };
        },
      },
    },
    extraTokenClaims: (ctx, token) => ({ groups: GROUPS[token.clientId] ?? [] }),
  });
  provider.proxy = false;
  server.on("request", provider.callback());
  process.stdout.write(JSON.stringify({ issuer }) + "\n");
});
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => server.close(() => process.exit(0)));
