// A school's identity provider in miniature for the dashboard's sign-in tests: oidc-provider (the certified
// OpenID Provider package) on loopback, plain http, with its development login page (type any known login
// name and any password, then "Continue"). Its issuer is http://localhost:PORT, a different site from the
// gateway's http://127.0.0.1:PORT, so the browser treats the round trip as cross-site, as it is in production.
//
// The server listens before the provider exists, since the provider's client names the gateways' callback
// addresses and the gateways need the issuer to start: `listen()`, start the gateways, then `configure()`.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Provider from 'oidc-provider';

export interface TestUser {
  email?: string;
  email_verified?: boolean;
}

export interface TestProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** `postLogoutRedirectUris`: where the provider's own sign-out may send the browser back to. */
  configure(redirectUris: string[], postLogoutRedirectUris?: string[]): void;
  close(): Promise<void>;
}

async function listenOn(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, 'localhost', resolve));
  return (server.address() as AddressInfo).port;
}

export async function startTestProvider(users: Record<string, TestUser>): Promise<TestProvider> {
  let handler: ((req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse) => void) | null = null;
  const server = createServer((req, res) => {
    if (handler) return handler(req, res);
    res.statusCode = 503;
    res.end('not configured yet');
  });
  const port = await listenOn(server);
  const issuer = `http://localhost:${port}`;
  const clientId = 'gateway-dashboard';
  const clientSecret = 'test-client-secret-that-is-long-enough-0123456789';
  return {
    issuer,
    clientId,
    clientSecret,
    configure(redirectUris, postLogoutRedirectUris = []) {
      const provider = new Provider(issuer, {
        clients: [
          {
            client_id: clientId,
            client_secret: clientSecret,
            redirect_uris: redirectUris,
            post_logout_redirect_uris: postLogoutRedirectUris,
            grant_types: ['authorization_code'],
            response_types: ['code'],
            token_endpoint_auth_method: 'client_secret_basic',
          },
        ],
        // PKCE for every client, confidential ones too (the default asks it of public clients only).
        pkce: { required: () => true },
        claims: { openid: ['sub'], email: ['email', 'email_verified'] },
        features: { devInteractions: { enabled: true } },
        cookies: { keys: ['test-provider-cookie-key'] },
        async findAccount(_ctx, id) {
          const user = users[id];
          if (!user) return undefined;
          return { accountId: id, claims: async () => ({ sub: id, ...user }) };
        },
      });
      handler = provider.callback();
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** A stand-in issuer at another address: discovery answers the real provider's metadata with `issuer` set as given. */
export async function startImpostor(
  realIssuer: string,
  claimedIssuer: (port: number) => string,
): Promise<{ url: string; close(): Promise<void> }> {
  let claimed = '';
  const server = createServer(async (req, res) => {
    const meta = (await (await fetch(`${realIssuer}/.well-known/openid-configuration`)).json()) as Record<string, unknown>;
    // Without the iss response parameter advertised, the client falls back to the ID token's own issuer check.
    delete meta.authorization_response_iss_parameter_supported;
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ ...meta, issuer: claimed }));
    void req;
  });
  const port = await listenOn(server);
  claimed = claimedIssuer(port);
  return { url: `http://localhost:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}
